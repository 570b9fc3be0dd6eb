// Includes the header that -DHEADER=<name> names (part_compiler.sh): a
// toolkit header the emulator provides builds, one it does not is refused
// at compile time with "not emulated: <name>".
#include <cuda_runtime.h>
#include HEADER
int main(void) { return 0; }
