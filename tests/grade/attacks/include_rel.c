/* The solution #included by a path relative to this file, as it sits in
   the repository. Expected: 0 (refused, or no such file in the sandbox). */
#include "../../../assignments/maxpool/solution.c"
