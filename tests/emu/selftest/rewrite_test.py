#!/usr/bin/env python3
"""Unit tests of nvcc-emu's source rewrite (kernel launches and __shared__
declarations) on the awkward cases, run on preprocessed-looking text."""
import importlib.machinery
import importlib.util
import os
import re
import sys

here = os.path.dirname(os.path.realpath(__file__))
loader = importlib.machinery.SourceFileLoader('nvcc_emu', os.path.join(here, '..', 'nvcc-emu'))
spec = importlib.util.spec_from_loader('nvcc_emu', loader)
emu = importlib.util.module_from_spec(spec)
loader.exec_module(emu)

passed = failed = 0


def check(name, cond, detail=''):
    global passed, failed
    if cond:
        passed += 1
        print('ok   %s' % name)
    else:
        failed += 1
        print('FAIL %s: %s' % (name, detail))


def launch(src):
    return emu.rewrite_launches('# 1 "t.cu"\n' + src)


out = launch('k<<<1, 2>>>(a, b);\n')
check('plain', '::cuemu::kernel_call(k, "k", "t.cu", 1, cuemu_tu_archs, 1, 2, 0, cuemu_launch_stream(0))(a, b)' in out, out)

out = launch('ns::k<float, std::vector<int>><<<g, b, 0, s>>>(x);\n')
check('template_and_namespace', 'kernel_call(ns::k<float, std::vector<int>>, ' in out and ', g, b, 0, cuemu_launch_stream(s))(x)' in out, out)

out = launch('k<T><<<f(n), dim3(2, 3), sizeof(T) * (n > 1 ? n : 1)>>>(p);\n')
check('nested_parens_in_config', 'cuemu_tu_archs, f(n), dim3(2, 3), sizeof(T) * (n > 1 ? n : 1), cuemu_launch_stream(0))(p)' in out, out)

out = launch('puts("<<<not a launch>>>"); k<<<1,\n 1>>>(\n x);\nint after;\n')
check('string_literal_left_alone', 'puts("<<<not a launch>>>")' in out, out)
check('multi_line_launch_keeps_line_count', out.count('\n') == ('# 1 "t.cu"\n' + 'puts("<<<not a launch>>>"); k<<<1,\n 1>>>(\n x);\nint after;\n').count('\n'), out)
check('line_of_launch', '"t.cu", 1,' in out, out)

out = launch('\n\n(k)<<<1, 1>>>();\n')
check('parenthesised_kernel_and_line', 'kernel_call((k), "(k)", "t.cu", 3,' in out, out)

out = launch('std::vector<std::vector<int>> v; k<<<1, 1>>>(v.size());\n')
check('template_closing_chevrons_elsewhere', 'std::vector<std::vector<int>> v; ::cuemu::kernel_call(k,' in out, out)

sh = emu.rewrite_shared('# 1 "t.cu"\nvoid f() { __shared__ float s[32][33]; }\n')
check('shared_2d', 'static thread_local float (&s)[32][33] = ::cuemu::shared_var<float[32][33], ' in sh, sh)

sh = emu.rewrite_shared('# 1 "t.cu"\nextern __shared__ __attribute__((aligned(16))) unsigned char raw[];\n')
check('extern_shared_aligned', 'static thread_local unsigned char (&raw)[] = ::cuemu::shared_dynamic<unsigned char>()' in sh, sh)

sh = emu.rewrite_shared('# 1 "t.cu"\nvoid f() { __shared__ typename B::TempStorage temp; }\n')
check('shared_dependent_type', 'static thread_local typename B::TempStorage &temp = ::cuemu::shared_var<typename B::TempStorage, ' in sh, sh)

sh = emu.rewrite_shared('# 1 "t.cu"\nvoid f() { __shared__ int a[4], b[4]; }\n')
check('shared_two_declarators', 'static thread_local int (&a)[4] = ::cuemu::shared_var<int[4], ' in sh
      and 'static thread_local int (&b)[4] = ::cuemu::shared_var<int[4], ' in sh and 'thread_local int a[4]' not in sh, sh)

# every declarator of a __shared__ declaration is block-shared storage of its own
# (a plain thread_local would be one copy for all blocks, unseen by racecheck and the shuffle)
def shared_vars(src):
    sh = emu.rewrite_shared('# 1 "t.cu"\n' + src)
    return sh, re.findall(r'static thread_local (.*?) = ::cuemu::shared_(var|dynamic)<(.*?)(?:, (\d+)ull, ([^>]*))?>\(\)', sh)


sh, v = shared_vars('__global__ void k() {\n  __shared__ int64_t row0, col0, lda, ldb;\n  row0 = 1; }\n')
check('shared_four_scalars_one_line', [x[0] for x in v] == ['int64_t &row0', 'int64_t &col0', 'int64_t &lda', 'int64_t &ldb']
      and len({x[3] for x in v}) == 4 and sh.count('\n') == 4 and 'row0 = 1;' in sh, sh)
sh, v = shared_vars('void f() { __shared__ float a[32], b[32][33], c; }\n')
check('shared_arrays_among_declarators', [(x[0], x[2]) for x in v] == [('float (&a)[32]', 'float[32]'),
      ('float (&b)[32][33]', 'float[32][33]'), ('float &c', 'float')], sh)
sh, v = shared_vars('void f() { static __shared__ volatile float v[8], w; }\n')
check('static_volatile_shared_declarators', [x[0] for x in v] == ['volatile float (&v)[8]', 'volatile float &w'], sh)
sh, v = shared_vars('void f() { __shared__ float *p, q, *r[2]; }\n')
check('shared_pointer_declarators', [x[2] for x in v] == ['float *', 'float', 'float *[2]'], sh)
sh, v = shared_vars('void f() { __shared__ __attribute__((aligned(16))) std::pair<int, float> x, y[3]; }\n')
check('shared_template_type_and_alignment', [(x[2], x[4]) for x in v] == [('std::pair<int, float>', '16'),
      ('std::pair<int, float>[3]', '16')], sh)
sh, v = shared_vars('template <int B, class T> void f() { __shared__ T s[B], t[2 * B]; }\n')
check('shared_template_declarators', [x[2] for x in v] == ['T[B]', 'T[2*B]'], sh)
sh, v = shared_vars('void f() { extern __shared__ float dyn[], dyn2[]; }\n')
check('extern_shared_declarators', [x[0] for x in v] == ['float (&dyn)[]', 'float (&dyn2)[]'] and
      all(x[1] == 'dynamic' for x in v), sh)
out = emu.rewrite('# 1 "t.cu"\n' + '__cuemu_global__ void k2(float *o) { __shared__ float sg[8][33], sb[8][33]; o[0] = sg[0][0] + sb[0][0]; }\n')
check('static_smem_counts_every_declarator', out.count('smem_add(') == 2 and out.count('sizeof(float[8][33])') == 2, out)


def rewrite_error(src):
    """The rewrite of src must stop the build: its message, or None when it did not."""
    import io
    err, saved = io.StringIO(), sys.stderr
    sys.stderr = err
    try:
        emu.rewrite_shared('# 1 "t.cu"\n' + src)
        return None
    except SystemExit:
        return err.getvalue()
    finally:
        sys.stderr = saved


e = rewrite_error('void f() {\n  __shared__ int n = 0;\n}\n')
check('shared_initialiser_refused', e is not None and 't.cu(2): error: initializer not allowed for __shared__ variable "n"' in e, e)
e = rewrite_error('void f() { __shared__ int a, b{1}; }\n')
check('shared_brace_initialiser_refused', e is not None and '"b"' in e, e)
e = rewrite_error('void f() { __shared__ void (*fp)(int); }\n')
check('shared_unreadable_declaration_refused', e is not None and 'cannot read this __shared__ declaration' in e, e)
check('shared_control_builds', rewrite_error('void f() { __shared__ int a, b; __shared__ float c[2]; }\n') is None)

sh = emu.rewrite_shared('# 1 "t.cu"\nvoid f() { static __shared__ volatile float v[8]; }\n')
check('static_volatile_shared', 'static thread_local volatile float (&v)[8]' in sh, sh)

# >>text outside code: string, raw-string and character literals, directives
sh = emu.rewrite_shared('# 1 "t.cu"\nvoid f() { puts("extern __shared__ float s[];"); __shared__ int a[2]; }\n')
check('shared_in_string_left_alone', 'puts("extern __shared__ float s[];")' in sh and 'shared_var<int[2]' in sh, sh)

src = 'const char *r = R"x(k<<<1, 1>>>(p); )" __shared__ int z;)x"; char q = \'"\'; int n = 1\'000; k<<<2, 3>>>(n);\n'
out = launch(src)
check('raw_string_char_and_digit_separator', out.count('kernel_call') == 1 and 'R"x(k<<<1, 1>>>(p); )" __shared__ int z;)x"' in out
      and 'kernel_call(k, "k", "t.cu", 1, cuemu_tu_archs, 2, 3, 0, cuemu_launch_stream(0))(n)' in out, out)

full = emu.rewrite('# 1 "t.cu"\n#pragma once\n__cuemu_global__ void k(const char *s) { puts("__cuemu_device__ <<<"); }\n# 7 "t.cu" 2\nint main() { k<<<1,\n1>>>("__shared__"); }\n')
check('directives_and_literals_survive', '#pragma once\n' in full and '\n# 7 "t.cu" 2\n' in full and '"__cuemu_device__ <<<"' in full
      and '("__shared__")' in full, full)


# >>the image: markers, kernel registrations, defaults, device variables
def image(src):
    return emu.rewrite('# 1 "t.cu"\n' + src)


src = ('namespace a { __cuemu_device__ float g(float x) { __shared__ float s[8]; return s[0] + x; }\n'
       '__cuemu_global__ void __cuemu_launch_bounds__(256, 2) k(float *p, int n = 4) {\n  const int M = 3;\n'
       '  __shared__ double d[M][2];\n  p[0] = g(d[0][0]) + n;\n}\n}\n'
       'struct S { __cuemu_device__ int f() const { return 1; } };\n'
       'auto lam = [] __cuemu_device__ (int x) { return x; };\n'
       'int main() { float *p = 0; a::k<<<1, 1>>>(p); }\n')
out = image(src)
check('markers_all_consumed', '__cuemu_' not in out, out)
check('line_count_kept', out.count('\n') == ('# 1 "t.cu"\n' + src).count('\n'), out)
check('kernel_registration', 'register_kernel<void(float *p, int n), &k>("k", (int)(256), (int)(2), ' in out, out)
check('static_smem_own_callee_and_local_constant', 'sizeof(double[(3)][2])' in out and 'sizeof(float[8])' in out, out)
check('default_argument_filled_in', 'cuemu_tu_archs, 1, 1, 0, cuemu_launch_stream(0))(p, static_cast<int>(4))' in out, out)

out = image('template <int B, class T> __cuemu_global__ void t(T *o) { __shared__ T s[B]; o[0] = s[0]; }\n'
            'template <> __cuemu_global__ void t<1, int>(int *o) { }\n')
check('template_kernel_registers_per_instance', 'struct cuemu_kinfo_' in out and '(void)&cuemu_kinfo_' in out
      and '&t<B, T>>("t"' in out and 'sizeof(T[B])' in out and out.count('register_kernel') == 1, out)

out = image('static __cuemu_global__ void s1(int) {}\nextern "C" { __cuemu_global__ void c1(void) {} }\n')
check('static_and_extern_c_kernels', '&s1>("s1"' in out and '&c1>("c1"' in out and 'void(), &c1' in out, out)

out = image('__cuemu_device__ int counter;\n__cuemu_constant__ float c[4] = {1, 2};\nextern __cuemu_device__ int e;\n'
            'struct P { int a; };\nstatic __cuemu_device__ P pt = {3};\n__cuemu_device__ constexpr int K = 4;\n'
            '__cuemu_device__ __attribute__((aligned(16))) float al[4];\n'
            'void f(P q) { int x = pt.a + q.pt.a + counter; }\n')
check('device_variable', '::cuemu::DevVar<int, false> counter("counter");' in out, out)
check('constant_array_with_initialiser', '::cuemu::DevVar<float[4], true> c("c", {1, 2});' in out, out)
check('extern_device_variable', 'extern ::cuemu::DevVar<int, false> e;' in out, out)
check('static_struct_variable', 'static ::cuemu::DevVar<P, false> pt("pt", {3});' in out, out)
check('constexpr_left_plain', ' constexpr int K = 4;' in out and 'DevVar<int, false> K' not in out, out)
check('aligned_variable', 'alignas(16) ::cuemu::DevVar<float[4], false> al("al");' in out, out)
check('member_of_device_struct', 'pt->a + q.pt.a + counter' in out, out)

# issue 37: sizes written with parentheses (a macro's (2 * R + 1)) or nested brackets are still device symbols
out = image('__cuemu_constant__ float c_Kernel[(2 * 8 + 1)];\n__cuemu_device__ int d2[((3))][(8 / 2)];\n'
            '__cuemu_device__ float sz[sizeof(float[2]) / sizeof(float)];\nalignas(16) __cuemu_device__ float al2[(4)];\n'
            '__cuemu_device__ int notvar(int (*f)(int));\n')
check('constant_array_parenthesised_size', '::cuemu::DevVar<float[(2*8+1)], true> c_Kernel("c_Kernel");' in out, out)
check('device_array_parenthesised_2d', '::cuemu::DevVar<int[((3))][(8/2)], false> d2("d2");' in out, out)
check('device_array_nested_brackets', '::cuemu::DevVar<float[sizeof(float[2])/sizeof(float)], false> sz("sz");' in out, out)
check('device_array_alignas_parenthesised', 'alignas(16) ::cuemu::DevVar<float[(4)], false> al2("al2");' in out, out)
check('device_function_declaration_not_a_variable', 'DevVar<int' not in out.split('al2')[-1], out)

out = image('__cuemu_device__ int n;\n__cuemu_managed__ __cuemu_device__ int mg;\n__cuemu_device__ float a[3];\n'
            'void f() { printf("%d %d %f %p", n, mg, a[1], &n); }\n')
check('managed_variable_stays_shared', '\n' + ' ' * 35 + 'int mg;' in out and 'DevVar<int, false> mg' not in out, out)
check('device_variable_passed_to_printf', 'printf("%d %d %f %p", n.get(), mg, a[1], &n)' in out, out)

out = image('struct A { int x; };\n__cuemu_device__ bool operator==(A a, A b) { return a.x == b.x; }\n'
            'template <class T> __cuemu_device__ T twice(T v) { return v + v; }\n')
check('operators_and_device_templates', '__cuemu_' not in out and 'DevVar' not in out and 'bool operator==(A a, A b)' in out, out)

src = ('__cuemu_global__ void k(int *d, int *p = \n# 5 "/usr/include/stddef.h" 3 4\n    __null\n# 5 "t.cu"\n) {}\n'
       'void f(int *d) { k<<<1, 1, 0,\n# 9 "/usr/include/stddef.h" 3 4\n __null\n# 9 "t.cu"\n>>>(d); }\n')
out = image(src)
flat = ' '.join(out.split())
check('line_markers_inside_a_default_and_a_launch', 'cuemu_tu_archs, 1, 1, 0, cuemu_launch_stream( __null ))' in flat and '(d, static_cast<int *>(__null)); }' in flat
      and '\n# 9' not in out and out.count('\n') == src.count('\n') + 1, out)

# >>device math names: a using-declaration in a block around a device function's body, never a macro
src = ('struct C { void (*log)(int); };\n'
       '__cuemu_device__ float f(C *c, float exp) { c->log(1); float y = logf(exp) + std::exp(2.0) + ::powf(y, 2); '
       'return y + exp + A::log(y) + B<int>::expf(y); }\n'
       'float h(C *c, float x) { c->log(2); return logf(x); }\n')
out = image(src)
check('device_math_using_block', '{ using ::cuemu::redirect::logf; { c->log(1);' in out and 'return y + exp + A::log(y)' in out
      and '} }' in out, out)
check('device_math_parameter_not_redirected', 'redirect::exp;' not in out, out)
check('device_math_qualified', 'std::cuemu_exp(2.0)' in out and '::cuemu_powf(y, 2)' in out and 'B<int>::expf(y)' in out, out)
check('device_math_host_function_untouched', 'float h(C *c, float x) { c->log(2); return logf(x); }' in out, out)
check('device_math_line_count_kept', out.count('\n') == ('# 1 "t.cu"\n' + src).count('\n'), out)

# >>issue 37: device code refused by name (inline PTX, dynamic parallelism), checked on the image scan
def refusals(src):
    img = emu.scan_image('# 1 "t.cu"\n' + src, emu.mask('# 1 "t.cu"\n' + src))
    return sorted(img.errors.values())


errs = refusals('__cuemu_device__ unsigned f() { unsigned r; asm volatile("mov.u32 %0, " "%%laneid;" : "=r"(r)); return r; }\n'
                'struct S { __cuemu_device__ void g() { __asm__("trap;"); } };\n'
                '__cuemu_global__ void k(int *p) { child<<<1, 1>>>(p); cudaDeviceSynchronize(); obj.cudaDeviceSynchronize(); }\n'
                'void host(int *p) { asm volatile("" ::: "memory"); child<<<1, 1>>>(p); cudaDeviceSynchronize(); }\n')
check('ptx_named_with_adjacent_literals', 'inline PTX is not emulated: "mov.u32 %0, %%laneid;"' in errs, errs)
check('ptx_in_member_function', 'inline PTX is not emulated: "trap;"' in errs, errs)
check('device_launch_named', any('child<<<...>>>' in e for e in errs), errs)
check('device_runtime_call_named', sum('cudaDeviceSynchronize in device code' in e for e in errs) == 1, errs)
check('host_code_left_alone', len(errs) == 4, errs)

# >>__CUDA_ARCH__: the device pass's bodies merged into the host pass's text
h = ('# 1 "t.cu"\nint host_only() { return 1; }\n__cuemu_device__ int d() {\n return 0;\n}\n'
     '__cuemu_host__ __cuemu_device__ int hd() { return 0; }\n__cuemu_global__ void k(int *o) { }\n')
dv = ('# 1 "t.cu"\n\n__cuemu_device__ int d() {\n return 800;\n}\n'
      '__cuemu_host__ __cuemu_device__ int hd() { return 800; }\n__cuemu_global__ void k(int *o) { o[0] = 800; }\n')
out = emu.merge_device_pass(h, [(800, [], ['sm_80'], dv)])
check('arch_device_body_from_device_pass', 'return 800;' in out.split('int d()')[1].split('__cuemu_host__')[0], out)
check('arch_host_device_gets_both', 'if (::cuemu::t_code_device >= 0)' in out and '{ return 800; } else /*cuemu-host-body*/' in out
      and '{ return 0; } }' in out, out)
check('arch_kernel_from_device_pass', 'o[0] = 800;' in out, out)
check('arch_host_function_from_host_pass', 'int host_only() { return 1; }' in out, out)
check('arch_same_text_unchanged', emu.merge_device_pass(h, [(800, [], ['sm_80'], h)]) == h)

h = '# 1 "t.cu"\nstruct P { __cuemu_host__ __cuemu_device__ int a() const { return 0; } int host() { return 2; } };\n'
dv = '# 1 "t.cu"\nstruct P { __cuemu_host__ __cuemu_device__ int a() const { return 900; } int host() { return 3; } };\n'
out = emu.merge_device_pass(h, [(900, [], ['sm_90'], dv)])
check('arch_member_function_gets_both', '{ return 900; } else /*cuemu-host-body*/' in out and 'int host() { return 2; }' in out, out)

d8 = '# 1 "t.cu"\n__cuemu_global__ void k(int *o) { o[0] = 800; }\n'
d9 = '# 1 "t.cu"\n__cuemu_global__ void k(int *o) { o[0] = 900; }\n'
out = emu.merge_device_pass('# 1 "t.cu"\n__cuemu_global__ void k(int *o) { }\n',
                            [(800, [], ['sm_80'], d8), (900, [], ['sm_90', 'compute_90'], d9)])
check('arch_targets_each_version', 'if (cuemu_arch_pick() == 0)' in out and 'o[0] = 800;' in out and 'o[0] = 900;' in out
      and "{80, 's', 0}, {90, 's', 1}, {90, 'p', 1}" in out, out)

print('%d passed, %d failed' % (passed, failed))
sys.exit(1 if failed else 0)
