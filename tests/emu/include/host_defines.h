#include "crt/host_defines.h"
