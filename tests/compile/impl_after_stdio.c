/* The implementation after a system header, under strict -std=c99 (issue
   35): <stdio.h> first hides POSIX's fileno; the implementation declares
   what it needs itself instead of an implicit declaration (an error under
   -Werror). */
#include <stdio.h>
#define GPUDL_IMPLEMENTATION
#include "../../gpudl.h"
