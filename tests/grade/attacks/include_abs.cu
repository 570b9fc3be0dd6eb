/* The solution #included from the repository by its absolute path.
   Expected: refused, 0. */
#include "@REPO@/assignments/sgemm/solution.cu"
