#!/usr/bin/env python3
"""abi_check.py - hold the emulator's headers against the real CUDA ones.

For every header under tests/emu/include that has a counterpart in the real
CUDA include directory (plus the mapped ones in EXTRA_PAIRS), collect the
names the emulator header itself declares: #define constants, enumerators,
functions (each overload), struct/union/enum/typedef names, struct fields,
variables. Generate one C++ probe program per group of headers that prints,
for each name: macro and enumerator values (and their types), each
function's full type, each type's spelling and size, each struct's size,
alignment and the offset and type of every field the emulator declares.
Compile the program against the emulator's headers and against the real
ones, run both, and compare. A name the real headers lack (the probe does
not compile there) or any difference is a failure naming the header and
the name; names only the real headers have are fine (not implemented).

Usage: abi_check.py [--emu DIR] [--real DIR] [--only a.h,b.h] [-v]
Prints "ok   abi H (N names)" or "FAIL abi H: ..." per header and a final
"N passed, N failed" line; exit status 1 on failure. Without the real
headers: "SKIPPED: no /usr/local/cuda/include", exit 0.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
EMU_DEFAULT = os.path.normpath(os.path.join(HERE, '..', 'include'))
REAL_DEFAULT = '/usr/local/cuda/include'
CXX = os.environ.get('CXX_ABI', 'g++')

# Emulator headers that are not named like their real counterparts: emulator
# path -> (real headers that hold the same declarations).
EXTRA_PAIRS = {
    'cuemu/device_math.h': ['crt/math_functions.h', 'crt/device_functions.h', 'crt/device_double_functions.h',
                            'sm_20_intrinsics.h', 'sm_30_intrinsics.h', 'sm_32_intrinsics.h', 'sm_61_intrinsics.h'],
}
# Never checked: emulator-only headers.
# cooperative_groups: device code only; the real headers need CCCL's tree to build at all.
# mma.h: declares nothing outside CUDA C++ (.cu), in the emulator as in the toolkit.
# device_functions.h, math_functions.h: the emulator's include cuda_runtime.h
# (programs include them by name); the toolkit's do not build on their own
# with a host compiler (they need cuda_runtime.h's prelude), so there is
# nothing to compare them with.
# cuda_pipeline*.h: device code only; the real ones do not build with a host compiler.
EXCLUDED = {'cuemu.h', 'cooperative_groups.h', os.path.join('cooperative_groups', 'reduce.h'), 'mma.h', 'device_functions.h',
            'math_functions.h', 'cuda_pipeline.h', 'cuda_pipeline_primitives.h'}
# Headers whose device-side declarations matter are compiled in the real
# headers' declaration-only device mode (as NVRTC sees them), the rest as a
# host compiler sees them.
DEVICE_MODE = {'cuda_fp16.h', 'cuda_bf16.h', 'math_constants.h', 'cuemu/device_math.h'}
DEVICE_REAL_FLAGS = ['-D__CUDACC__', '-D__CUDACC_RTC__', '-D__CUDACC_VER_MAJOR__=13', '-D__CUDACC_VER_MINOR__=0']
DEVICE_REAL_PRELUDE = ['ext/type_traits.h', 'utility', 'cstring', 'nv/target', 'vector_types.h', 'vector_functions.h',
                       'crt/math_functions.h', 'crt/device_functions.h', 'crt/device_double_functions.h',
                       'device_atomic_functions.h', 'sm_20_atomic_functions.h', 'sm_32_atomic_functions.h',
                       'sm_60_atomic_functions.h', 'sm_20_intrinsics.h', 'sm_30_intrinsics.h', 'sm_32_intrinsics.h']
# Macros that expand to a braced initializer (not an expression): probed by
# initialising a static object of the named type with them and printing its
# bytes (static storage: the padding is zero in both builds).
INITIALIZER_MACROS = {'NCCL_CONFIG_INITIALIZER': 'ncclConfig_t'}
# Real headers that must come before others (in this order) when present.
FIRST = ['cuda_runtime_api.h', 'cuda_runtime.h', 'driver_types.h', 'vector_types.h', 'library_types.h',
         'cuda_fp16.h', 'cuda_bf16.h', 'cublas_api.h', 'cublas_v2.h', 'cudnn_version.h', 'cudnn_graph.h']

# --------------------------------------------------------------------------
# tokenizer and declaration parser (for the emulator's own headers)

TOKEN_RE = re.compile(r'''
    (?P<ws>\s+)
  | (?P<str>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')
  | (?P<num>\.?\d(?:[eEpP][+-]|[\w.])*)
  | (?P<id>[A-Za-z_]\w*)
  | (?P<op>::|->\*?|\.\.\.|<<=|>>=|<=>|[-+*/%&|^!=<>]=|&&|\|\||<<|>>|\+\+|--|\#\#|[][(){};,.:?~!%^&*+\-=<>|/#])
''', re.X)

STORAGE = {'static', 'inline', 'extern', 'constexpr', '__inline__', '__inline', 'register', 'thread_local',
           '__thread', 'friend', 'virtual', 'explicit', 'consteval', 'constinit', '__extension__'}
TAGS = {'struct', 'union', 'class', 'enum'}


def tokenize(text):
    out = []
    for m in TOKEN_RE.finditer(text):
        kind = m.lastgroup
        if kind == 'ws':
            continue
        out.append(m.group())
    return out


def match_close(toks, i):
    """toks[i] is an opening bracket; index of its partner."""
    pairs = {'(': ')', '[': ']', '{': '}'}
    want = pairs[toks[i]]
    opener = toks[i]
    depth = 0
    for j in range(i, len(toks)):
        if toks[j] == opener:
            depth += 1
        elif toks[j] == want:
            depth -= 1
            if depth == 0:
                return j
    return len(toks) - 1


def split_depth0(toks, sep=','):
    parts, cur, depth, angle = [], [], 0, 0
    for t in toks:
        if t in '([{':
            depth += 1
        elif t in ')]}':
            depth -= 1
        if t == sep and depth == 0:
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur or parts:
        parts.append(cur)
    return parts


def strip_attrs(toks):
    """Drops __attribute__((...)), alignas(...), __declspec(...), [[...]]."""
    out, i = [], 0
    while i < len(toks):
        t = toks[i]
        if t in ('__attribute__', '__declspec', 'alignas', '__align__', '__asm__', 'asm', '__asm') and i + 1 < len(toks) and toks[i + 1] == '(':
            i = match_close(toks, i + 1) + 1
            continue
        if t == '[' and i + 1 < len(toks) and toks[i + 1] == '[':
            j = match_close(toks, i)
            i = j + 1
            continue
        out.append(t)
        i += 1
    return out


class Decls:
    def __init__(self):
        self.enumerators = []      # names
        self.types = []            # (name, kind) kind: struct/union/enum/typedef
        self.structs = {}          # name -> (kind, [(field, access, bitfield)])
        self.functions = []        # (name, typedef-text-with-@ for the name, noexcept-free)
        self.variables = []        # names


def parse_struct_body(toks):
    """Fields of a struct body (tokens between the braces)."""
    fields, access = [], 'public'
    i = 0
    while i < len(toks):
        t = toks[i]
        if t in ('public', 'protected', 'private') and i + 1 < len(toks) and toks[i + 1] == ':':
            access = t
            i += 2
            continue
        # one member declaration: up to ';' at depth 0, or a function body
        j, depth = i, 0
        body_fn = False
        while j < len(toks):
            if toks[j] in '([':
                j = match_close(toks, j) + 1
                continue
            if toks[j] == '{':
                k = match_close(toks, j)
                seg = toks[i:j]
                if '(' in seg and not any(x in TAGS for x in seg[:1]):
                    body_fn = True   # member function definition
                    j = k + 1
                    if j < len(toks) and toks[j] == ';':
                        j += 1
                    break
                j = k + 1
                continue
            if toks[j] == ';' and depth == 0:
                break
            j += 1
        seg = strip_attrs(toks[i:j])
        i = j + 1 if not body_fn else j
        if body_fn or not seg:
            continue
        if seg[0] in ('typedef', 'using', 'static_assert', 'template', 'friend', 'static', 'enum'):
            continue
        if seg[0] in ('struct', 'union', 'class') and '{' in seg:
            # nested type: its declarators after the closing brace are fields
            b = seg.index('{')
            e = match_close(seg, b)
            decl = seg[e + 1:]
            if not decl:
                # anonymous struct/union member: its fields are ours
                for f in parse_struct_body(seg[b + 1:e]):
                    fields.append(f)
                continue
            seg = ['int'] + decl  # a placeholder type; declarators follow
        # member function declaration?
        if '(' in seg:
            p = seg.index('(')
            # function pointer field: ( * name ) ( ... )
            if p + 2 < len(seg) and seg[p + 1] == '*' and re.match(r'[A-Za-z_]\w*$', seg[p + 2]) and p + 3 < len(seg) and seg[p + 3] == ')':
                fields.append((seg[p + 2], access, False))
            continue
        for d in split_depth0(seg):
            d = [x for x in d if x not in ('const', 'volatile', 'mutable')]
            bit = ':' in d
            if bit:
                d = d[:d.index(':')]
            if '=' in d:
                d = d[:d.index('=')]
            while d and d[-1] == ']':
                k = len(d) - 1
                while k >= 0 and d[k] != '[':
                    k -= 1
                d = d[:k]
            ids = [x for x in d if re.match(r'[A-Za-z_]\w*$', x)]
            if ids and (len(d) > 1 or not fields or True):
                name = ids[-1]
                if name not in ('int', 'unsigned', 'char', 'short', 'long', 'float', 'double', 'bool', 'void', 'signed'):
                    fields.append((name, access, bit))
    return fields


def parse_decls(toks, out, prefix_tag=None):
    i = 0
    n = len(toks)
    while i < n:
        t = toks[i]
        if t == ';':
            i += 1
            continue
        if t == 'extern' and i + 1 < n and toks[i + 1].startswith('"'):
            if i + 2 < n and toks[i + 2] == '{':
                e = match_close(toks, i + 2)
                parse_decls(toks[i + 3:e], out)
                i = e + 1
                continue
            i += 2
            continue
        if t in ('namespace',):
            j = i
            while j < n and toks[j] not in ('{', ';'):
                j += 1
            if j < n and toks[j] == '{':
                i = match_close(toks, j) + 1
            else:
                i = j + 1
            continue
        if t == 'template':
            # skip the template declaration or definition
            j = i + 1
            if j < n and toks[j] == '<':
                depth = 0
                while j < n:
                    if toks[j] == '<':
                        depth += 1
                    elif toks[j] == '>':
                        depth -= 1
                        if depth == 0:
                            break
                    elif toks[j] == '>>':
                        depth -= 2
                        if depth <= 0:
                            break
                    j += 1
            i = skip_decl(toks, j + 1)
            continue
        if t in ('static_assert', 'using') and not (t == 'using' and i + 2 < n and toks[i + 2] == '=' and toks[i + 1] != 'namespace'):
            i = skip_decl(toks, i)
            continue
        if t == 'using':
            name = toks[i + 1]
            out.types.append((name, 'typedef'))
            i = skip_decl(toks, i)
            continue
        # one declaration: up to ';' at depth 0 or a function body '{...}'
        j = i
        end = None
        body = None
        while j < n:
            if toks[j] in '([':
                j = match_close(toks, j) + 1
                continue
            if toks[j] == '{':
                k = match_close(toks, j)
                if is_function_head(toks[i:j]):
                    # a function definition
                    body = (j, k)
                    end = k + 1
                    break
                j = k + 1
                continue
            if toks[j] == ';':
                end = j + 1
                break
            j += 1
        if end is None:
            end = n
        seg = toks[i:(body[0] if body else end - 1)]
        handle_decl(seg, out, bool(body))
        i = end


def is_function_head(seg):
    """True when seg (the tokens before a '{') starts a function body."""
    s2 = [x for x in strip_attrs(seg) if x not in STORAGE]
    if not s2 or s2[0] == 'typedef' or ')' not in s2:
        return False
    if s2[0] in TAGS and '(' not in s2:
        return False
    if '=' in s2 and s2.index('=') < s2.index('('):
        return False
    return True


def skip_decl(toks, i):
    n = len(toks)
    j = i
    while j < n:
        if toks[j] in '([':
            j = match_close(toks, j) + 1
            continue
        if toks[j] == '{':
            k = match_close(toks, j)
            j = k + 1
            if j < n and toks[j] == ';':
                return j + 1
            # a function body ends the declaration
            seg = toks[i:j]
            if ')' in seg:
                return j
            continue
        if toks[j] == ';':
            return j + 1
        j += 1
    return n


def handle_enum_body(body, out):
    for part in split_depth0(body):
        part = strip_attrs(part)
        if part and re.match(r'[A-Za-z_]\w*$', part[0]):
            out.enumerators.append(part[0])


def handle_decl(seg, out, has_body):
    seg = strip_attrs(seg)
    if not seg:
        return
    is_typedef = seg[0] == 'typedef'
    if is_typedef:
        seg = seg[1:]
    lead = [x for x in seg if x not in STORAGE]
    # a tag with a body: struct/union/enum definitions
    if lead and lead[0] in TAGS or (len(lead) > 1 and lead[0] in ('const', 'volatile') and lead[1] in TAGS):
        k = 0 if lead[0] in TAGS else 1
        kind = lead[k]
        rest = lead[k + 1:]
        if rest and rest[0] in ('class', 'struct'):   # enum class
            rest = rest[1:]
        tag = None
        if rest and re.match(r'[A-Za-z_]\w*$', rest[0]) and rest[0] not in ('final',):
            tag = rest[0]
        if '{' in rest:
            b = rest.index('{')
            e = match_close(rest, b)
            inner = rest[b + 1:e]
            after = rest[e + 1:]
            if kind == 'enum':
                handle_enum_body(inner, out)
                fields = None
            else:
                fields = parse_struct_body(inner)
            names = []
            if tag:
                names.append(tag)
            if is_typedef:
                for d in split_depth0(after):
                    ids = [x for x in d if re.match(r'[A-Za-z_]\w*$', x)]
                    if ids and '*' not in d and '[' not in d:
                        names.append(ids[-1])
                    elif ids:
                        out.types.append((ids[-1], 'typedef'))
            for nm in names:
                out.types.append((nm, kind if nm == tag or not tag else 'typedef'))
                if fields is not None:
                    out.structs[nm] = (kind, fields)
            if not is_typedef and after:
                for d in split_depth0(after):
                    ids = [x for x in d if re.match(r'[A-Za-z_]\w*$', x)]
                    if ids:
                        out.variables.append(ids[-1])
            return
        # forward declaration or elaborated type use
        if not is_typedef and tag and len(rest) == 1:
            out.types.append((tag, kind))
            return
    if is_typedef:
        for d in split_depth0(seg):
            name = typedef_name(d)
            if name:
                out.types.append((name, 'typedef'))
        return
    # function declaration?
    fn = function_parts(seg)
    if fn:
        out.functions.append(fn)
        return
    if has_body:
        return
    # variable(s)
    for d in split_depth0(lead):
        if '=' in d:
            d = d[:d.index('=')]
        ids = [x for x in d if re.match(r'[A-Za-z_]\w*$', x)]
        if len(ids) >= 2 and '::' not in d:
            out.variables.append(ids[-1])


def typedef_name(d):
    # function pointer / array / plain
    if '(' in d:
        p = d.index('(')
        if p + 1 < len(d) and d[p + 1] in ('*', '&', '^'):
            k = p + 1
            while k < len(d) and d[k] in ('*', '&', 'const', 'volatile', '__cdecl', 'CUDARTAPI'):
                k += 1
            if k < len(d) and re.match(r'[A-Za-z_]\w*$', d[k]):
                return d[k]
        # typedef R name(args): a function type
        if p > 0 and re.match(r'[A-Za-z_]\w*$', d[p - 1]):
            return d[p - 1]
        return None
    while d and d[-1] == ']':
        k = len(d) - 1
        while k >= 0 and d[k] != '[':
            k -= 1
        d = d[:k]
    ids = [x for x in d if re.match(r'[A-Za-z_]\w*$', x)]
    return ids[-1] if ids else None


def function_parts(seg):
    """(name, text of a function type with '@' for the name) or None."""
    # find the declarator: name '(' at depth 0, the first '(' not part of the return type
    i = 0
    lead = []
    toks = seg
    depth = 0
    for i, t in enumerate(toks):
        if t == '(':
            break
        if t == '<':
            depth += 1
        elif t == '>':
            depth -= 1
    else:
        return None
    p = i
    if p == 0:
        return None
    # operator names
    if 'operator' in toks[:p]:
        k = toks.index('operator')
        if k > 0 and toks[k - 1] == '::':
            return None
        name_toks = toks[k:p]
        if toks[p:p + 2] == ['(', ')'] and name_toks == ['operator']:
            # operator()(...)
            name_toks = ['operator', '(', ')']
            p += 2
        name = 'operator' + ''.join(name_toks[1:])
        start = k
    else:
        name = toks[p - 1]
        start = p - 1
        if not re.match(r'[A-Za-z_]\w*$', name):
            return None
        if start > 0 and toks[start - 1] == '::':
            return None   # a qualified (member) name
        if start > 0 and toks[start - 1] == '~':
            return None
    ret = [x for x in toks[:start] if x not in STORAGE]
    if not ret:
        return None   # a constructor-like or macro call
    if any(x in ('=',) for x in ret):
        return None
    close = match_close(toks, p)
    params = toks[p + 1:close]
    trail = toks[close + 1:]
    # declarators like int (*f(int))(int) are out of scope
    if any(x == '(' for x in trail if x not in ()) and 'noexcept' not in trail and 'throw' not in trail:
        return None
    noexcept = ''
    if 'noexcept' in trail:
        k = trail.index('noexcept')
        if k + 1 < len(trail) and trail[k + 1] == '(':
            e = match_close(trail, k + 1)
            noexcept = ' noexcept(' + ' '.join(trail[k + 2:e]) + ')'
        else:
            noexcept = ' noexcept'
    elif 'throw' in trail:
        k = trail.index('throw')
        if trail[k + 1:k + 3] == ['(', ')']:
            noexcept = ' noexcept'
    if '=' in trail and ('delete' in trail or 'default' in trail):
        return None
    if 'const' in trail or '&' in trail or '&&' in trail or 'override' in trail:
        return None   # member functions
    # parameters without default arguments
    ps = []
    for prm in split_depth0(params):
        prm = strip_attrs(prm)
        if '=' in prm:
            depth = 0
            for q, x in enumerate(prm):
                if x in '([{':
                    depth += 1
                elif x in ')]}':
                    depth -= 1
                elif x == '=' and depth == 0:
                    prm = prm[:q]
                    break
        ps.append(' '.join(prm))
    text = ' '.join(ret) + ' @(' + ', '.join(ps) + ')' + noexcept
    return (name, text)


# --------------------------------------------------------------------------
# preprocessing: the declarations and macros each emulator header itself holds

def preprocess(includes, incdir, flags, prelude=()):
    src = ''.join('#include <%s>\n' % h for h in list(prelude) + list(includes))
    cmd = [CXX, '-std=c++17', '-E', '-dD', '-w', '-I', incdir] + flags + ['-x', 'c++', '-']
    p = subprocess.run(cmd, input=src, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError('preprocessing failed:\n' + p.stderr[-4000:])
    return p.stdout


LINEMARK = re.compile(r'^# (\d+) "([^"]*)"')


def split_by_file(pp, incdir):
    """{relative header path: (code text, [(macro, body)], set(undefined))}"""
    per = {}
    cur = None
    incdir = os.path.realpath(incdir)
    for line in pp.split('\n'):
        m = LINEMARK.match(line)
        if m:
            path = m.group(2)
            rp = os.path.realpath(path) if path and not path.startswith('<') else path
            cur = os.path.relpath(rp, incdir) if rp.startswith(incdir + os.sep) else None
            continue
        if cur is None:
            continue
        code, macros, undefs = per.setdefault(cur, ([], [], set()))
        if line.startswith('#define '):
            m = re.match(r'#define ([A-Za-z_]\w*)(\(?)(.*)$', line)
            if m:
                macros.append((m.group(1), m.group(2) == '(', m.group(3).strip()))
            continue
        if line.startswith('#undef '):
            undefs.add(line.split()[1])
            continue
        if line.startswith('#'):
            continue
        code.append(line)
    return {k: ('\n'.join(v[0]), v[1], v[2]) for k, v in per.items()}


# --------------------------------------------------------------------------
# probes

PROBE_HEAD = r'''
#include <stdio.h>
#include <stddef.h>
#include <string.h>
#include <type_traits>
template <class T> struct cuemu_abi_tn { static const char *get() { return __PRETTY_FUNCTION__; } };
template <class T, class = void> struct cuemu_abi_complete : std::false_type {};
template <class T> struct cuemu_abi_complete<T, decltype(void(sizeof(T)))> : std::true_type {};
template <class T> static void cuemu_abi_type(const char *id) {
    if constexpr (cuemu_abi_complete<T>::value && !std::is_function<T>::value && !std::is_void<T>::value)
        printf("%s\ttype %s size %zu align %zu\n", id, cuemu_abi_tn<T>::get(), sizeof(T), alignof(T));
    else
        printf("%s\ttype %s incomplete\n", id, cuemu_abi_tn<T>::get());
}
template <class T> static void cuemu_abi_value(const char *id, const T &v) {
    typedef typename std::decay<T>::type D;
    if constexpr (std::is_pointer<D>::value || std::is_member_pointer<D>::value || std::is_null_pointer<D>::value) {
        printf("%s\tpointer type %s\n", id, cuemu_abi_tn<D>::get());   /* addresses differ between builds */
    } else if constexpr (std::is_integral<D>::value || std::is_enum<D>::value) {
        if (std::is_signed<D>::value || std::is_enum<D>::value)
            printf("%s\tvalue %lld type %s\n", id, (long long)v, cuemu_abi_tn<D>::get());
        else
            printf("%s\tvalue %llu type %s\n", id, (unsigned long long)v, cuemu_abi_tn<D>::get());
    } else if constexpr (std::is_floating_point<D>::value) {
        printf("%s\tvalue %La type %s\n", id, (long double)v, cuemu_abi_tn<D>::get());
    } else if constexpr (std::is_same<D, const char *>::value || std::is_same<D, char *>::value) {
        printf("%s\tvalue \"%s\"\n", id, v);
    } else {
        unsigned char b[sizeof(D)];
        memcpy(b, &v, sizeof b);
        printf("%s\tvalue bytes", id);
        for (size_t i = 0; i < sizeof b; i++) printf(" %02x", b[i]);
        printf(" type %s\n", cuemu_abi_tn<D>::get());
    }
}
'''


class Probe:
    def __init__(self, pid, header, name, kind, body):
        self.pid, self.header, self.name, self.kind, self.body = pid, header, name, kind, body


def make_probes(header, decls, macros, undefs, start):
    probes = []
    pid = start

    def add(name, kind, body):
        nonlocal pid
        probes.append(Probe(pid, header, name, kind, body))
        pid += 1

    def emu_only(nm):
        return nm.lower().startswith('cuemu') or nm.startswith('__cuemu')

    seen = set()
    for (nm, fnlike, body) in macros:
        if fnlike or nm in undefs or emu_only(nm) or nm in seen:
            continue
        seen.add(nm)
        if nm in INITIALIZER_MACROS:
            add(nm, 'initializer', 'static const %s cuemu_v = %s; cuemu_abi_value("@ID", cuemu_v);'
                % (INITIALIZER_MACROS[nm], nm))
            continue
        if body == '':
            add(nm, 'macro-defined', '#ifndef %s\n#error missing\n#endif\n' % nm)
            continue
        # the value where it is a constant expression, and always the type
        add(nm, 'macro-value', 'constexpr auto cuemu_v = (%s); cuemu_abi_value("@ID", cuemu_v);' % nm)
        add(nm, 'macro', 'cuemu_abi_type<decltype((%s))>("@ID");' % nm)
    for nm in dict.fromkeys(decls.enumerators):
        if emu_only(nm):
            continue
        add(nm, 'enumerator', 'constexpr long long cuemu_v = (long long)(%s); cuemu_abi_value("@ID", cuemu_v);'
            ' cuemu_abi_type<decltype(%s)>("@ID");' % (nm, nm))
    tseen = set()
    for (nm, kind) in decls.types:
        if emu_only(nm) or nm in tseen:
            continue
        tseen.add(nm)
        add(nm, 'type', 'cuemu_abi_type<%s>("@ID");' % nm)
    for nm, (kind, fields) in decls.structs.items():
        if emu_only(nm):
            continue
        fseen = set()
        for (f, access, bit) in fields:
            if f in fseen or access == 'private':
                continue
            fseen.add(f)
            label = '%s.%s' % (nm, f)
            if bit:
                add(label, 'field', 'cuemu_abi_type<decltype(%s::%s)>("@ID");' % (nm, f))
            elif access == 'public':
                add(label, 'field', 'printf("@ID\\toffset %%zu\\n", (size_t)offsetof(%s, %s)); '
                    'cuemu_abi_type<decltype(%s::%s)>("@ID");' % (nm, f, nm, f))
            else:
                add(label, 'field', 'struct cuemu_d : %s { static void go() { '
                    'printf("@ID\\toffset %%zu\\n", (size_t)offsetof(cuemu_d, %s)); '
                    'cuemu_abi_type<decltype(cuemu_d::%s)>("@ID"); } }; cuemu_d::go();' % (nm, f, f))
    fseen = {}
    for (nm, text) in decls.functions:
        if emu_only(nm):
            continue
        key = (nm, text)
        if key in fseen:
            continue
        fseen[key] = True
        label = '%s(%d)' % (nm, sum(1 for k in fseen if k[0] == nm))
        td = text.replace('@', 'cuemu_ft')
        add(nm if label.endswith('(1)') else label, 'function',
            'typedef %s; cuemu_abi_type<decltype(static_cast<cuemu_ft *>(&%s))>("@ID");' % (td, nm))
    # a name the emulator does not overload: its exact type (noexcept
    # included), where the real headers do not overload it either
    counts = {}
    for (nm, text) in fseen:
        counts[nm] = counts.get(nm, 0) + 1
    for nm, c in counts.items():
        if c == 1 and not nm.startswith('operator'):
            add(nm, 'function-exact', 'cuemu_abi_type<decltype(&%s)>("@ID");' % nm)
    for nm in dict.fromkeys(decls.variables):
        if emu_only(nm):
            continue
        add(nm, 'variable', 'cuemu_abi_type<decltype(%s)>("@ID");' % nm)
    return probes, pid


def probe_source(includes, probes, prelude=()):
    lines = []
    for h in prelude:
        lines.append('#include <%s>' % h)
    for h in includes:
        lines.append('#include <%s>' % h)
    lines.extend(PROBE_HEAD.split("\n"))
    where = {}
    for p in probes:
        body = p.body.replace('@ID', str(p.pid))
        if p.kind == 'macro-defined':
            for bl in body.rstrip('\n').split('\n'):
                lines.append(bl)
                where[len(lines)] = p.pid
            lines.append('static void cuemu_p%d() { printf("%d\\tdefined\\n"); }' % (p.pid, p.pid))
            where[len(lines)] = p.pid
            continue
        lines.append('static void cuemu_p%d() { %s }' % (p.pid, body))
        where[len(lines)] = p.pid
    lines.append('int main() {')
    for p in probes:
        lines.append('    cuemu_p%d();' % p.pid)
    lines.append('    return 0;\n}')
    return '\n'.join(lines) + '\n', where


CTX_LINE = re.compile(r"In (?:static member |member )?function [\u2018'](?:static )?void cuemu_p(\d+)\(\)")


def build_and_run(tmp, tag, incdir, flags, includes, probes, prelude=()):
    """Compiles (dropping probes that fail), runs; returns ({pid: [lines]}, {pid: error})."""
    failed = {}
    live = list(probes)
    d = os.path.join(tmp, tag)
    os.makedirs(d, exist_ok=True)
    src_path = os.path.join(d, 'probe.cpp')
    exe = os.path.join(d, 'probe')
    for _ in range(12):
        if os.environ.get('CUEMU_ABI_DEBUG'):
            sys.stderr.write('%s: round with %d probes\n' % (tag, len(live)))
        src, where = probe_source(includes, live, prelude)
        with open(src_path, 'w') as f:
            f.write(src)
        # nothing is called: unresolved functions (whose address a constant
        # may take) are fine
        cmd = [CXX, '-std=c++17', '-w', '-fmax-errors=400', '-O0', '-I', incdir] + flags + \
              [src_path, '-o', exe, '-Wl,--unresolved-symbols=ignore-all']
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode == 0:
            break
        bad = {}
        ctx = None
        for line in p.stderr.split('\n'):
            m = CTX_LINE.search(line)
            if m:
                ctx = int(m.group(1))
                continue
            m = re.search(r'probe\.cpp:(\d+):\d+:   required from here', line)
            if m and where.get(int(m.group(1))) is not None:
                ctx = where[int(m.group(1))]
                continue
            m = re.search(r'(?:^|: )(?:fatal )?error: (.*)$', line)
            if not m:
                continue
            pid = None
            m2 = re.match(r'^[^:]*probe\.cpp:(\d+):', line)
            if m2:
                pid = where.get(int(m2.group(1)))
            if pid is None:
                pid = ctx
            if pid is not None:
                bad.setdefault(pid, m.group(1)[:160])
        if not bad:
            raise RuntimeError('%s: the probe program does not compile:\n%s' % (tag, p.stderr[-6000:]))
        if os.environ.get('CUEMU_ABI_DEBUG'):
            sys.stderr.write('BAD %s\n' % sorted(bad.items())[:12])
        failed.update(bad)
        live = [q for q in live if q.pid not in bad]
    else:
        raise RuntimeError('%s: too many rounds of probe errors' % tag)
    r = subprocess.run([exe], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError('%s: the probe program failed (%d): %s' % (tag, r.returncode, r.stderr[-2000:]))
    res = {}
    for line in r.stdout.split('\n'):
        if '\t' in line:
            a, b = line.split('\t', 1)
            res.setdefault(int(a), []).append(normalise(b))
    return res, failed


def normalise(s):
    # "type static const char* cuemu_abi_tn<T>::get() [with T = X] size ..." -> "type X size ..."
    s = re.sub(r'static const char\* cuemu_abi_tn<T>::get\(\) \[with T = (.*?)\]( size| incomplete|$)', r'\1\2', s)
    s = s.replace('cuemu_d::', '')
    s = re.sub(r'\s+', ' ', s).strip()
    return s


# --------------------------------------------------------------------------

def discover(emu, real, only):
    pairs = []
    for root, dirs, files in os.walk(emu):
        dirs.sort()
        for fn in sorted(files):
            if not fn.endswith(('.h', '.hpp')):
                continue
            rel = os.path.relpath(os.path.join(root, fn), emu)
            if rel in EXCLUDED:
                continue
            if rel.startswith('cuemu' + os.sep):
                if rel in EXTRA_PAIRS and all(os.path.exists(os.path.join(real, r)) for r in EXTRA_PAIRS[rel]):
                    pairs.append((rel, EXTRA_PAIRS[rel]))
                continue
            if os.path.exists(os.path.join(real, rel)):
                pairs.append((rel, [rel]))
    if only:
        pairs = [p for p in pairs if p[0] in only or os.path.basename(p[0]) in only]
    return pairs


def order(hs):
    first = [h for h in FIRST if h in hs]
    return first + [h for h in hs if h not in first]


def run_group(tmp, tag, emu, real, pairs, device, verbose):
    emu_includes = order([p[0] for p in pairs])
    real_includes = []
    for p in pairs:
        for r in p[1]:
            if r not in real_includes:
                real_includes.append(r)
    real_includes = order(real_includes)
    emu_flags = []
    real_flags = DEVICE_REAL_FLAGS if device else []
    real_prelude = DEVICE_REAL_PRELUDE if device else []
    pp = preprocess(emu_includes, emu, emu_flags)
    per = split_by_file(pp, emu)
    probes, nxt = [], 1
    names = {}
    for rel, _ in pairs:
        code, macros, undefs = per.get(rel, ('', [], set()))
        decls = Decls()
        parse_decls(tokenize(code), decls)
        ps, nxt = make_probes(rel, decls, macros, undefs, nxt)
        probes += ps
    byid = {p.pid: p for p in probes}
    emu_res, emu_failed = build_and_run(tmp, tag + '-emu', emu, emu_flags, emu_includes, probes)
    if verbose:
        for pid, err in sorted(emu_failed.items()):
            p = byid[pid]
            print('  note: %s: %s %s is not probed (%s)' % (p.header, p.kind, p.name, err))
    probes = [p for p in probes if p.pid not in emu_failed]
    real_res, real_failed = build_and_run(tmp, tag + '-real', real, real_flags, real_includes, probes, real_prelude)
    if device and real_failed:
        # what the declaration-only device view lacks (the constants and
        # host helpers of the .hpp files) is looked up as a host compiler
        # sees the same headers
        retry = [p for p in probes if p.pid in real_failed]
        host_view = ['cuda_runtime.h'] + [h for h in real_includes if not h.startswith(('crt/', 'sm_', 'device_'))]
        res2, failed2 = build_and_run(tmp, tag + '-real-host', real, [], host_view, retry)
        for p in retry:
            if p.pid not in failed2:
                real_res[p.pid] = res2.get(p.pid, [])
                del real_failed[p.pid]
    problems = {}
    for p in probes:
        names.setdefault(p.header, set()).add(p.name.split('(')[0].split('.')[0])
        if p.pid in real_failed and p.kind == 'function-exact':
            continue   # overloaded in the real headers: the cast probe decides
        if p.pid in real_failed and p.kind == 'macro-value':
            continue   # not a constant expression there: the type probe decides
        if p.pid in real_failed:
            what = 'the real headers have no such declaration' if p.kind != 'function' else \
                'no declaration of this type in the real headers'
            detail = ''
            if p.kind == 'function':
                detail = ' (emulator: %s)' % ' / '.join(emu_res.get(p.pid, ['?']))
            problems.setdefault(p.header, []).append('%s %s: %s%s [%s]' % (p.kind, p.name, what, detail, real_failed[p.pid]))
            continue
        a, b = emu_res.get(p.pid, []), real_res.get(p.pid, [])
        if a != b:
            problems.setdefault(p.header, []).append('%s %s: emulator %s / real %s' % (p.kind, p.name, ' | '.join(a), ' | '.join(b)))
    out = []
    for rel, _ in pairs:
        out.append((rel, len(names.get(rel, ())), problems.get(rel, [])))
    return out


def first_error(msg):
    for line in msg.split('\n'):
        if 'error' in line and ('.h:' in line or '.hpp:' in line or 'probe' in line):
            return line.strip()[:300]
    return msg.split('\n')[0][:300]


def per_thread_mapping(emu, real):
    """nvcc --default-stream per-thread: the emulator's cuda_runtime_api.h
    maps API names to _ptsz / _ptds entry points as the toolkit's does
    (#define cudaX __CUDART_API_PTSZ(cudaX) there, cudaX_ptsz here). A text
    comparison: (header, names, problems), or None without the mapping."""
    try:
        mine = open(os.path.join(emu, 'cuda_runtime_api.h')).read()
        theirs = open(os.path.join(real, 'cuda_runtime_api.h')).read()
    except OSError:
        return None
    emu_map = dict(re.findall(r'#\s*define\s+(cuda\w+)\s+\1_(pt[sd][sz])\b', mine))
    if not emu_map:
        return None
    real_map = {n: k.lower() for k, n in re.findall(r'#\s*define\s+cuda\w+\s+__CUDART_API_(PT[SD][SZ])\((cuda\w+)\)', theirs)}
    probs = []
    for name, kind in sorted(emu_map.items()):
        if name not in real_map:
            probs.append('%s: mapped to %s_%s; the toolkit does not map it' % (name, name, kind))
        elif real_map[name] != kind:
            probs.append('%s: mapped to %s_%s; the toolkit maps it to %s_%s' % (name, name, kind, name, real_map[name]))
    return ('cuda_runtime_api.h (per-thread default stream)', len(emu_map), probs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--emu', default=EMU_DEFAULT)
    ap.add_argument('--real', default=REAL_DEFAULT)
    ap.add_argument('--only', default='')
    ap.add_argument('-v', '--verbose', action='store_true')
    a = ap.parse_args()
    if not os.path.isdir(a.real):
        print('SKIPPED: no %s' % a.real)
        return 0
    only = set(x for x in a.only.split(',') if x)
    pairs = discover(a.emu, a.real, only)
    dev = [p for p in pairs if p[0] in DEVICE_MODE]
    host = [p for p in pairs if p[0] not in DEVICE_MODE]
    results = []
    with tempfile.TemporaryDirectory(prefix='cuemu-abi-') as tmp:
        jobs = []
        with ThreadPoolExecutor(max_workers=2) as ex:
            if host:
                jobs.append((ex.submit(run_group, tmp, 'host', a.emu, a.real, host, False, a.verbose), host, False))
            if dev:
                jobs.append((ex.submit(run_group, tmp, 'device', a.emu, a.real, dev, True, a.verbose), dev, True))
            for j, group, device in jobs:
                try:
                    results += j.result()
                except RuntimeError as e:
                    if len(group) == 1:
                        results.append((group[0][0], 0, ['the probe program does not build: %s' % first_error(str(e))]))
                        continue
                    # a header that does not build breaks its group: check each on its own
                    singles = [ex.submit(run_group, tmp, '%s-%d' % ('device' if device else 'host', k), a.emu, a.real,
                                         [p], device, a.verbose) for k, p in enumerate(group)]
                    for p, f in zip(group, singles):
                        try:
                            results += f.result()
                        except RuntimeError as e2:
                            results.append((p[0], 0, ['does not build on its own with a host compiler: %s' % first_error(str(e2))]))
    if not only or 'cuda_runtime_api.h' in only:
        pt = per_thread_mapping(a.emu, a.real)
        if pt:
            results.append(pt)
    passed = failed = 0
    for rel, n, probs in sorted(results):
        if probs:
            failed += 1
            print('FAIL abi %s (%d names, %d problems)' % (rel, n, len(probs)))
            for pr in dict.fromkeys(probs):
                print('     %s: %s' % (rel, pr))
        else:
            passed += 1
            print('ok   abi %s (%d names)' % (rel, n))
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
