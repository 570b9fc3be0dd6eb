/* A program's own macros before the header (issue 35): every single capital
   letter and the short names programs define (min, max, CHECK, ...). The
   header, and with USER_MACROS_IMPL its implementation, must compile, and
   the program's macros must be what they were afterwards. */
#define A 1024
#define B 1024
#define C 1024
#define D 1024
#define E 1024
#define F 1024
#define G 1024
#define H 1024
#define I 1024
#define J 1024
#define K 1024
#define L 1024
#define M 1024
#define N 1024
#define O 1024
#define P 1024
#define Q 1024
#define R 1024
#define S 1024
#define T 1024
#define U 1024
#define V 1024
#define W 1024
#define X 1024
#define Y 1024
#define Z 1024
#define min(a, b) ((a) < (b) ? (a) : (b))
#define max(a, b) ((a) > (b) ? (a) : (b))
#define CHECK(x) ((void)(x))
#define ASSERT(x) ((void)(x))
#define SWAP(a, b) ((void)0)
#define ALIGN(x) (x)
#define likely(x) (x)
#define unlikely(x) (x)
#ifdef USER_MACROS_IMPL
#  define GPUDL_IMPLEMENTATION
#endif
#include "../../gpudl.h"
typedef char user_macros_restored[(A + N + Z == 3 * 1024 && min(1, 2) == 1) ? 1 : -1];
int user_macros_main(void);
int user_macros_main(void) { return (int)sizeof(user_macros_restored) - 1 + N - 1024; }
