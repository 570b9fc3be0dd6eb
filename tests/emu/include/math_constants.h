/* math_constants.h (cuemu) - the CUDART_* constants of CUDA's
   math_constants.h. Each value here is the mathematical constant rounded to
   nearest (float for the _F names, double otherwise), written as a
   hexadecimal literal; a _HI/_LO pair splits a constant into its rounded
   value and the rounded remainder. The special values are compile-time
   constants built from their bit patterns (the real header spells them
   with __int_as_float / __longlong_as_double: same types and bits). */
#ifndef __MATH_CONSTANTS_H__
#define __MATH_CONSTANTS_H__

/* single precision */
#define CUDART_INF_F __builtin_inff()
#define CUDART_NAN_F __builtin_nanf("0x3fffff")              /* 0x7fffffff */
#define CUDART_MIN_DENORM_F 0x1p-149F
#define CUDART_MAX_NORMAL_F 0x1.fffffep+127F
#define CUDART_NEG_ZERO_F (-0.0F)
#define CUDART_ZERO_F 0.0F
#define CUDART_ONE_F 1.0F
#define CUDART_NORM_HUGE_F 3.402823466e38F
#define CUDART_REMQUO_BITS_F 3U
#define CUDART_REMQUO_MASK_F (~((~0U) << CUDART_REMQUO_BITS_F))
#define CUDART_TRIG_PLOSS_F 105615.0F

/* double precision */
#define CUDART_INF __builtin_inf()
#define CUDART_NAN (-__builtin_nan("0x8000000000000"))      /* 0xfff8000000000000 */
#define CUDART_NEG_ZERO (-0.0)
#define CUDART_MIN_DENORM 0x1p-1074
#define CUDART_ZERO 0.0
#define CUDART_ONE 1.0
#define CUDART_TWO_TO_23 8388608.0
#define CUDART_TWO_TO_52 4503599627370496.0
#define CUDART_TWO_TO_53 9007199254740992.0
#define CUDART_TWO_TO_54 18014398509481984.0
#define CUDART_TWO_TO_M54 0x1p-54
#define CUDART_TWO_TO_M1022 0x1p-1022
#define CUDART_TRIG_PLOSS 2147483648.0
#define CUDART_DBL2INT_CVT 6755399441055744.0   /* 1.5 * 2^52 */

/* constants rounded to nearest */
#define CUDART_SQRT_HALF_F 0x1.6a09e60000000p-1F
#define CUDART_SQRT_HALF_HI_F 0x1.6a09e60000000p-1F
#define CUDART_SQRT_HALF_LO_F 0x1.9fcef40000000p-27F
#define CUDART_SQRT_TWO_F 0x1.6a09e60000000p+0F
#define CUDART_THIRD_F 0x1.5555560000000p-2F
#define CUDART_PIO4_F 0x1.921fb60000000p-1F
#define CUDART_PIO2_F 0x1.921fb60000000p+0F
#define CUDART_3PIO4_F 0x1.2d97c80000000p+1F
#define CUDART_2_OVER_PI_F 0x1.45f3060000000p-1F
#define CUDART_SQRT_2_OVER_PI_F 0x1.9884540000000p-1F
#define CUDART_PI_F 0x1.921fb60000000p+1F
#define CUDART_L2E_F 0x1.7154760000000p+0F
#define CUDART_L2T_F 0x1.a934f00000000p+1F
#define CUDART_LG2_F 0x1.3441360000000p-2F
#define CUDART_LGE_F 0x1.bcb7b20000000p-2F
#define CUDART_LN2_F 0x1.62e4300000000p-1F
#define CUDART_LNT_F 0x1.26bb1c0000000p+1F
#define CUDART_LNPI_F 0x1.250d040000000p+0F
#define CUDART_TWO_TO_M126_F 0x1.0000000000000p-126F
#define CUDART_TWO_TO_126_F 0x1.0000000000000p+126F
#define CUDART_TWO_TO_23_F 0x1.0000000000000p+23F
#define CUDART_TWO_TO_24_F 0x1.0000000000000p+24F
#define CUDART_TWO_TO_31_F 0x1.0000000000000p+31F
#define CUDART_TWO_TO_32_F 0x1.0000000000000p+32F
#define CUDART_SQRT_TWO 0x1.6a09e667f3bcdp+0
#define CUDART_SQRT_HALF 0x1.6a09e667f3bcdp-1
#define CUDART_SQRT_HALF_HI 0x1.6a09e667f3bcdp-1
#define CUDART_SQRT_HALF_LO -0x1.bdd3413b26456p-55
#define CUDART_THIRD 0x1.5555555555555p-2
#define CUDART_TWOTHIRD 0x1.5555555555555p-1
#define CUDART_PIO4 0x1.921fb54442d18p-1
#define CUDART_PIO4_HI 0x1.921fb54442d18p-1
#define CUDART_PIO4_LO 0x1.1a62633145c07p-55
#define CUDART_PIO2 0x1.921fb54442d18p+0
#define CUDART_PIO2_HI 0x1.921fb54442d18p+0
#define CUDART_PIO2_LO 0x1.1a62633145c07p-54
#define CUDART_3PIO4 0x1.2d97c7f3321d2p+1
#define CUDART_2_OVER_PI 0x1.45f306dc9c883p-1
#define CUDART_PI 0x1.921fb54442d18p+1
#define CUDART_PI_HI 0x1.921fb54442d18p+1
#define CUDART_PI_LO 0x1.1a62633145c07p-53
#define CUDART_SQRT_2PI 0x1.40d931ff62706p+1
#define CUDART_SQRT_2PI_HI 0x1.40d931ff62706p+1
#define CUDART_SQRT_2PI_LO -0x1.a6a0d6f814637p-53
#define CUDART_SQRT_PIO2 0x1.40d931ff62706p+0
#define CUDART_SQRT_PIO2_HI 0x1.40d931ff62706p+0
#define CUDART_SQRT_PIO2_LO -0x1.a6a0d6f814637p-54
#define CUDART_SQRT_2OPI 0x1.9884533d43651p-1
#define CUDART_L2E 0x1.71547652b82fep+0
#define CUDART_L2E_HI 0x1.71547652b82fep+0
#define CUDART_L2E_LO 0x1.777d0ffda0d24p-56
#define CUDART_L2T 0x1.a934f0979a371p+1
#define CUDART_LG2 0x1.34413509f79ffp-2
#define CUDART_LG2_HI 0x1.34413509f79ffp-2
#define CUDART_LG2_LO -0x1.9dc1da994fd21p-59
#define CUDART_LGE 0x1.bcb7b1526e50ep-2
#define CUDART_LGE_HI 0x1.bcb7b1526e50ep-2
#define CUDART_LGE_LO 0x1.95355baaafad3p-57
#define CUDART_LN2 0x1.62e42fefa39efp-1
#define CUDART_LN2_HI 0x1.62e42fefa39efp-1
#define CUDART_LN2_LO 0x1.abc9e3b39803fp-56
#define CUDART_LNT 0x1.26bb1bbb55516p+1
#define CUDART_LNT_HI 0x1.26bb1bbb55516p+1
#define CUDART_LNT_LO -0x1.f48ad494ea3e9p-53
#define CUDART_LNPI 0x1.250d048e7a1bdp+0
#define CUDART_LN2_X_1024 0x1.62e42fefa39efp+9
#define CUDART_LN2_X_1025 0x1.633ce8fb9f87ep+9
#define CUDART_LN2_X_1075 0x1.74910d52d3052p+9
#define CUDART_LG2_X_1024 0x1.34413509f79ffp+8
#define CUDART_LG2_X_1075 0x1.439b746e36b52p+8


#endif
