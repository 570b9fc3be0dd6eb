/* cuemu/devvar.h - what tests/emu/nvcc-emu's rewrite of a .cu file calls
   to make the compiled image known from the source (C++ only): kernels
   registered with their launch bounds, static shared memory and a launcher
   for cudaLaunchKernel(const void *), and __device__ / __constant__
   variables with a copy per device. */
#ifndef CUEMU_DEVVAR_H
#define CUEMU_DEVVAR_H

#include <stddef.h>
#include <string.h>
#include <type_traits>
#include "registry.h"
#include "kernel.h"

namespace cuemu {

/* >>kernels */
/* The static shared memory of a kernel: each __shared__ variable at its
   alignment after the previous ones (Programming Guide, "Shared Memory":
   static allocations are part of the kernel image). */
constexpr size_t smem_add(size_t acc, size_t size, size_t align_asked, size_t align_natural) {
    return (acc + ((align_asked ? align_asked : align_natural) - 1)) / (align_asked ? align_asked : align_natural) *
           (align_asked ? align_asked : align_natural) + size;
}

namespace {   /* per translation unit: the launcher names the TU's target architectures */
template <class F, F *fn> struct ArrayLauncher;
template <class... P, void (*fn)(P...)> struct ArrayLauncher<void(P...), fn> {
    static const char *&name() {
        static const char *n = "(cudaLaunchKernel)";
        return n;
    }
    /* cudaLaunchKernel(const void *func, ..., void **args): the i-th entry of
       args points at the i-th argument (Runtime API, cudaLaunchKernel). */
    static cudaError_t launch(const void *, dim3 grid, dim3 block, void **args, size_t smem, cudaStream_t stream,
                              int cooperative) {
        return launch_from_array(fn, grid, block, args, smem, stream, cooperative, name(), ::cuemu_tu_archs);
    }
};

/* nvcc-emu emits one per kernel definition (per instance of a template
   kernel, when it is instantiated): what a GPU's image says of the kernel
   before its first launch. Runs during static initialisation. */
template <class F, F *fn> int register_kernel(const char *name, int max_threads, int min_blocks, size_t static_smem) {
    ArrayLauncher<F, fn>::name() = name;
    return kernel_register((const void *)fn,
                           KernelInfo{name, max_threads, min_blocks, static_smem, &ArrayLauncher<F, fn>::launch});
}

} /* namespace */

/* >>variables */
/* A namespace-scope __device__ / __constant__ variable (Programming Guide,
   "Variable Memory Space Specifiers"): the object itself is the host
   shadow, the symbol that cudaMemcpyToSymbol and friends take (same size
   and alignment as the variable); code reaches the variable through
   symbol_resolve, so a kernel sees its device's copy and host code the
   shadow. IsConst: __constant__, read-only in device code. */
template <class T, bool IsConst> struct DevVarBase {
    alignas(T) T value_;

    DevVarBase() = default;
    DevVarBase(const DevVarBase &) = delete;
    DevVarBase &operator=(const DevVarBase &) = delete;

    T *resolved() const { return (T *)symbol_resolve((void *)&value_); }
    /* after the initial value is in: each device's copy starts from it */
    void reg(const char *name) { symbol_register((void *)&value_, sizeof(T), name, IsConst); }
};

template <class T, bool IsConst, class = void> struct DevVar;

/* Scalars, structs and pointers. */
template <class T, bool IsConst> struct DevVar<T, IsConst, std::enable_if_t<!std::is_array<T>::value>>
    : DevVarBase<T, IsConst> {
    using Ref = std::conditional_t<IsConst, const T &, T &>;
    using Ptr = std::conditional_t<IsConst, const T *, T *>;
    explicit DevVar(const char *name) { this->reg(name); }
    DevVar(const char *name, const T &v) {
        this->value_ = v;
        this->reg(name);
    }

    Ref get() const { return *this->resolved(); }
    operator Ref() const { return get(); }
    Ptr operator&() const { return this->resolved(); }
    Ptr operator->() const { return this->resolved(); }
    template <class U = T, class = std::enable_if_t<std::is_pointer<U>::value>> decltype(auto) operator*() const { return *get(); }
    template <class I> decltype(auto) operator[](I i) const { return get()[i]; }
    template <class... A> decltype(auto) operator()(A &&...a) const { return get()(static_cast<A &&>(a)...); }

    /* Writes: __device__ only (a __constant__ variable is read-only in device
       code: Programming Guide, "__constant__"). */
#define CUEMU_DEVVAR_ASSIGN(op) \
    template <class U, bool C = IsConst, class = std::enable_if_t<!C>> T &operator op(const U &v) const { return get() op v; }
    CUEMU_DEVVAR_ASSIGN(=) CUEMU_DEVVAR_ASSIGN(+=) CUEMU_DEVVAR_ASSIGN(-=) CUEMU_DEVVAR_ASSIGN(*=) CUEMU_DEVVAR_ASSIGN(/=)
    CUEMU_DEVVAR_ASSIGN(%=) CUEMU_DEVVAR_ASSIGN(&=) CUEMU_DEVVAR_ASSIGN(|=) CUEMU_DEVVAR_ASSIGN(^=)
    CUEMU_DEVVAR_ASSIGN(<<=) CUEMU_DEVVAR_ASSIGN(>>=)
#undef CUEMU_DEVVAR_ASSIGN
    template <bool C = IsConst, class = std::enable_if_t<!C>> T &operator++() const { return ++get(); }
    template <bool C = IsConst, class = std::enable_if_t<!C>> T &operator--() const { return --get(); }
    template <bool C = IsConst, class = std::enable_if_t<!C>> T operator++(int) const { return get()++; }
    template <bool C = IsConst, class = std::enable_if_t<!C>> T operator--(int) const { return get()--; }
};

/* Arrays: decay to a pointer to the resolved copy, index it. */
template <class T, bool IsConst> struct DevVar<T, IsConst, std::enable_if_t<std::is_array<T>::value>>
    : DevVarBase<T, IsConst> {
    static_assert(std::is_trivially_copyable<T>::value, "cuemu: __device__ arrays of trivially copyable elements");
    using E = std::remove_extent_t<T>;
    using ERef = std::conditional_t<IsConst, const E &, E &>;
    using EP = std::conditional_t<IsConst, const E *, E *>;
    using Ptr = std::conditional_t<IsConst, const T *, T *>;
    explicit DevVar(const char *name) { this->reg(name); }
    DevVar(const char *name, const T &v) {
        memcpy((void *)&this->value_, (const void *)&v, sizeof(T));
        this->reg(name);
    }

    operator EP() const { return *this->resolved(); }
    Ptr operator&() const { return this->resolved(); }
    template <class I> ERef operator[](I i) const { return (*this->resolved())[i]; }
    template <class I> EP operator+(I i) const { return (EP) * this + i; }
};

} /* namespace cuemu */

#endif
