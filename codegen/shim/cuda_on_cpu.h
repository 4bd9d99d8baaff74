// CUDA-on-CPU shim: compiles CUDA C kernels with a host C++20 compiler (g++)
// so that generated kernels can be run and checked on machines without a GPU.
//
// - threadIdx/blockIdx/blockDim/gridDim are thread-locals set by the launcher;
// - a launch runs the grid's blocks one after another, and the threads of a
//   block concurrently (one std::thread each), so __syncthreads() is a real
//   barrier over the block's threads and `__shared__` (static) is shared by
//   them;
// - atomicAdd is std::atomic_ref::fetch_add;
// - warp shuffles (__shfl_down_sync, __shfl_xor_sync) exchange values through
//   a per-block buffer between two block barriers, so every thread of the
//   block must reach them (as in a whole-block reduction); warps are 32 wide.
//
// BAT_SHIM_EXPORT_SERIAL(kernel) runs a launch's threads one after another on
// the calling thread instead (for kernels whose threads never synchronize).
// Defining BAT_SHIM_SERIAL_ONLY before the include leaves out the threaded
// launch, barriers and shuffles, and with them <thread>, <barrier> and
// <atomic>: those headers were most of a small module's compile time.
//
// BAT_SHIM_EXPORT(kernel) defines the C entry point the stub libcuda calls:
//   extern "C" void bat_shim_launch_<kernel>(unsigned gx, unsigned gy, unsigned gz,
//       unsigned bx, unsigned by, unsigned bz, unsigned shared_bytes, void** args)
// where args[i] points to the i-th kernel argument (cuLaunchKernel's kernelParams).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>
#ifndef BAT_SHIM_SERIAL_ONLY
#include <atomic>
#include <barrier>
#include <thread>
#include <vector>
#endif

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
using uint3 = dim3;

namespace bat_shim {
inline thread_local dim3 thread_idx{0, 0, 0};
inline thread_local dim3 block_idx{0, 0, 0};
inline thread_local dim3 block_dim{1, 1, 1};
inline thread_local dim3 grid_dim{1, 1, 1};
constexpr unsigned warp_size = 32;

template <typename... Args, std::size_t... I>
void call_with(void (*kernel)(Args...), void** args, std::index_sequence<I...>) {
    kernel(*static_cast<std::remove_cv_t<std::remove_reference_t<Args>>*>(args[I])...);
}

// A launch whose threads run one after another on the calling thread: for
// kernels without block-level synchronization (each thread independent),
// where this is one valid CUDA schedule and much cheaper than real threads.
template <typename... Args>
void launch_serial(void (*kernel)(Args...), dim3 grid, dim3 block, void** args) {
    block_dim = block;
    grid_dim = grid;
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                block_idx = dim3(bx, by, bz);
                for (unsigned tz = 0; tz < block.z; ++tz)
                    for (unsigned ty = 0; ty < block.y; ++ty)
                        for (unsigned tx = 0; tx < block.x; ++tx) {
                            thread_idx = dim3(tx, ty, tz);
                            call_with(kernel, args, std::index_sequence_for<Args...>{});
                        }
            }
}

#ifndef BAT_SHIM_SERIAL_ONLY
inline thread_local std::barrier<>* block_barrier = nullptr;
inline thread_local std::vector<std::uint64_t>* shuffle_slots = nullptr;

inline unsigned linear_thread() {
    return thread_idx.x + block_dim.x * (thread_idx.y + block_dim.y * thread_idx.z);
}

template <typename T>
T shuffle_from(T value, unsigned source_lane_in_warp_or_self) {
    static_assert(sizeof(T) <= sizeof(std::uint64_t), "shuffle of a value wider than 8 bytes");
    const unsigned me = linear_thread();
    std::uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof(T));
    (*shuffle_slots)[me] = bits;
    block_barrier->arrive_and_wait();
    const unsigned warp_base = me - me % warp_size;
    const unsigned source = warp_base + source_lane_in_warp_or_self;
    T out = value;
    if (source < shuffle_slots->size()) {
        std::memcpy(&out, &(*shuffle_slots)[source], sizeof(T));
    }
    block_barrier->arrive_and_wait();
    return out;
}

template <typename... Args>
void launch(void (*kernel)(Args...), dim3 grid, dim3 block, void** args) {
    const unsigned threads = block.x * block.y * block.z;
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                std::barrier<> barrier(threads);
                std::vector<std::uint64_t> slots(threads);
                std::vector<std::thread> workers;
                workers.reserve(threads);
                for (unsigned tz = 0; tz < block.z; ++tz)
                    for (unsigned ty = 0; ty < block.y; ++ty)
                        for (unsigned tx = 0; tx < block.x; ++tx)
                            workers.emplace_back([=, &barrier, &slots] {
                                thread_idx = dim3(tx, ty, tz);
                                block_idx = dim3(bx, by, bz);
                                block_dim = block;
                                grid_dim = grid;
                                block_barrier = &barrier;
                                shuffle_slots = &slots;
                                call_with(kernel, args, std::index_sequence_for<Args...>{});
                            });
                for (auto& worker : workers) worker.join();
            }
}
#endif
}  // namespace bat_shim

#define threadIdx (::bat_shim::thread_idx)
#define blockIdx (::bat_shim::block_idx)
#define blockDim (::bat_shim::block_dim)
#define gridDim (::bat_shim::grid_dim)
#define warpSize (32)

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __shared__ static
#define __constant__ static const

#ifdef BAT_SHIM_SERIAL_ONLY
// A serial launch runs its threads one after another: nothing runs between
// an atomic's read and its write.
template <typename T>
T atomicAdd(T* address, T value) {
    const T old = *address;
    *address = old + value;
    return old;
}
#else
inline void __syncthreads() {
    if (::bat_shim::block_barrier == nullptr) {
        std::fprintf(stderr, "bat shim: __syncthreads in a kernel exported with BAT_SHIM_EXPORT_SERIAL\n");
        std::abort();
    }
    ::bat_shim::block_barrier->arrive_and_wait();
}

template <typename T>
T atomicAdd(T* address, T value) {
    return std::atomic_ref<T>(*address).fetch_add(value);
}

template <typename T>
T __shfl_down_sync(unsigned /*mask*/, T value, unsigned delta, int width = 32) {
    const unsigned lane = ::bat_shim::linear_thread() % ::bat_shim::warp_size;
    const unsigned in_width = lane % width;
    const unsigned source = in_width + delta < unsigned(width) ? lane + delta : lane;
    return ::bat_shim::shuffle_from(value, source);
}

template <typename T>
T __shfl_xor_sync(unsigned /*mask*/, T value, int lane_mask, int width = 32) {
    const unsigned lane = ::bat_shim::linear_thread() % ::bat_shim::warp_size;
    const unsigned source = lane ^ unsigned(lane_mask);
    const bool same_group = source / width == lane / width;
    return ::bat_shim::shuffle_from(value, same_group ? source : lane);
}
#endif

// Classification functions CUDA has in the global namespace.
using std::isfinite;
using std::isinf;
using std::isnan;

// CUDA math functions without a <cmath> namesake.
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline double normcdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }
inline double __longlong_as_double(long long bits) {
    double x;
    std::memcpy(&x, &bits, sizeof x);
    return x;
}
inline long long __double_as_longlong(double x) {
    long long bits;
    std::memcpy(&bits, &x, sizeof bits);
    return bits;
}

#define BAT_SHIM_EXPORT_SERIAL(kernel)                                                 \
    extern "C" void bat_shim_launch_##kernel(unsigned gx, unsigned gy, unsigned gz,    \
                                             unsigned bx, unsigned by, unsigned bz,    \
                                             unsigned /*shared_bytes*/, void** args) { \
        ::bat_shim::launch_serial(kernel, dim3(gx, gy, gz), dim3(bx, by, bz), args);  \
    }

#ifndef BAT_SHIM_SERIAL_ONLY
#define BAT_SHIM_EXPORT(kernel)                                                        \
    extern "C" void bat_shim_launch_##kernel(unsigned gx, unsigned gy, unsigned gz,    \
                                             unsigned bx, unsigned by, unsigned bz,    \
                                             unsigned /*shared_bytes*/, void** args) { \
        ::bat_shim::launch(kernel, dim3(gx, gy, gz), dim3(bx, by, bz), args);        \
    }
#endif
