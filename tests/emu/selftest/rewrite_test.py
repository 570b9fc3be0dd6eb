#!/usr/bin/env python3
"""Unit tests of nvcc-emu's source rewrite (kernel launches and __shared__
declarations) on the awkward cases, run on preprocessed-looking text."""
import importlib.machinery
import importlib.util
import os
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
check('plain', '::cuemu::kernel_call(k, "k", "t.cu", 1, cuemu_tu_archs, 1, 2)(a, b)' in out, out)

out = launch('ns::k<float, std::vector<int>><<<g, b, 0, s>>>(x);\n')
check('template_and_namespace', 'kernel_call(ns::k<float, std::vector<int>>, ' in out and ', g, b, 0, s)(x)' in out, out)

out = launch('k<T><<<f(n), dim3(2, 3), sizeof(T) * (n > 1 ? n : 1)>>>(p);\n')
check('nested_parens_in_config', 'cuemu_tu_archs, f(n), dim3(2, 3), sizeof(T) * (n > 1 ? n : 1))(p)' in out, out)

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
check('shared_two_declarators_fall_back', 'static thread_local int a[4], b[4]' in sh, sh)

sh = emu.rewrite_shared('# 1 "t.cu"\nvoid f() { static __shared__ volatile float v[8]; }\n')
check('static_volatile_shared', 'static thread_local volatile float (&v)[8]' in sh, sh)

print('%d passed, %d failed' % (passed, failed))
sys.exit(1 if failed else 0)
