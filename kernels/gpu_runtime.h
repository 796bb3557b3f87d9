// RAII owners for GPU runtime handles (streams, events, device and pinned buffers) and
// the conversion of runtime errors into Status with the call that failed named. GPU
// builds only; code that must also build without a GPU uses gpu_encoder.h.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "hip_compat.h"
#include "status.h"

namespace conveyor {

// "what: hipErrorX (text)" as an INTERNAL Status, or OK.
Status GpuStatus(hipError_t err, const std::string& what);

#define GPU_RETURN_IF_ERROR(call, what) RETURN_IF_ERROR(::conveyor::GpuStatus((call), (what)))

// Moves a handle out, leaving the default (null) behind.
template <typename T>
T TakeHandle(T& h) {
  return std::exchange(h, T{});
}

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(TakeHandle(o.ptr_)), size_(TakeHandle(o.size_)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;

  static StatusOr<DeviceBuffer> Allocate(size_t size, const std::string& what);
  // Keeps the buffer if it is large enough, otherwise replaces it.
  Status Reserve(size_t size, const std::string& what);

  template <typename T = void>
  T* get() const { return static_cast<T*>(ptr_); }
  size_t size() const { return size_; }

 private:
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

// Page-locked host memory (hipHostMalloc), optionally mapped into the device's address
// space for small flags and counters.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : ptr_(TakeHandle(o.ptr_)), device_ptr_(TakeHandle(o.device_ptr_)), size_(TakeHandle(o.size_)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;

  static StatusOr<PinnedBuffer> Allocate(size_t size, bool mapped, const std::string& what);
  Status Reserve(size_t size, const std::string& what);

  template <typename T = void>
  T* get() const { return static_cast<T*>(ptr_); }
  template <typename T = void>
  T* device_get() const { return static_cast<T*>(device_ptr_); }  // mapped buffers only
  size_t size() const { return size_; }

 private:
  void* ptr_ = nullptr;
  void* device_ptr_ = nullptr;
  size_t size_ = 0;
};

// Caller-owned host memory page-locked in place (hipHostRegister) so copies can read it
// directly; unregistered when this goes. The owner must make sure no copy from it is
// still in flight by then.
class HostRegistration {
 public:
  HostRegistration() = default;
  ~HostRegistration();
  HostRegistration(HostRegistration&& o) noexcept : ptr_(TakeHandle(o.ptr_)), size_(TakeHandle(o.size_)) {}
  HostRegistration& operator=(HostRegistration&& o) noexcept;

  static StatusOr<HostRegistration> Register(void* ptr, size_t size, const std::string& what);
  void* get() const { return ptr_; }
  size_t size() const { return size_; }

 private:
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

class Stream {
 public:
  Stream() = default;
  ~Stream();
  Stream(Stream&& o) noexcept : s_(TakeHandle(o.s_)) {}
  Stream& operator=(Stream&& o) noexcept;

  // Always non-blocking: never implicitly ordered with the legacy default stream.
  static StatusOr<Stream> Create(int priority, const std::string& what);
  hipStream_t get() const { return s_; }

 private:
  hipStream_t s_ = nullptr;
};

class Event {
 public:
  Event() = default;
  ~Event();
  Event(Event&& o) noexcept : e_(TakeHandle(o.e_)) {}
  Event& operator=(Event&& o) noexcept;

  // Timing-disabled events are the cheap kind used for ordering.
  static StatusOr<Event> Create(bool timing, const std::string& what);
  hipEvent_t get() const { return e_; }

 private:
  hipEvent_t e_ = nullptr;
};

// Lowest-numbered (that is, highest) priority the device allows for a stream.
int HighestStreamPriority();

}  // namespace conveyor
