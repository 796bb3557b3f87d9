// GPU handle owners and error conversion.
#include "gpu_runtime.h"

namespace conveyor {

Status GpuStatus(hipError_t err, const std::string& what) {
  if (err == hipSuccess) return OkStatus();
  const std::string text = std::string(hipGetErrorName(err)) + " (" + hipGetErrorString(err) + ")";
  if (err == hipErrorNoDevice) return Unavailable(what + ": " + text);
  return Internal(what + ": " + text);
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != nullptr) (void)hipFree(ptr_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_ != nullptr) (void)hipFree(ptr_);
    ptr_ = TakeHandle(o.ptr_);
    size_ = TakeHandle(o.size_);
  }
  return *this;
}

StatusOr<DeviceBuffer> DeviceBuffer::Allocate(size_t size, const std::string& what) {
  DeviceBuffer b;
  const hipError_t err = hipMalloc(&b.ptr_, size == 0 ? 1 : size);
  if (err != hipSuccess) {
    b.ptr_ = nullptr;
    return GpuStatus(err, "hipMalloc(" + what + ", " + std::to_string(size) + " bytes)");
  }
  b.size_ = size;
  return b;
}

Status DeviceBuffer::Reserve(size_t size, const std::string& what) {
  if (ptr_ != nullptr && size_ >= size) return OkStatus();
  *this = DeviceBuffer();  // free first so the old and new buffers never coexist
  ASSIGN_OR_RETURN(*this, Allocate(size, what));
  return OkStatus();
}

PinnedBuffer::~PinnedBuffer() {
  if (ptr_ != nullptr) (void)hipHostFree(ptr_);
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_ != nullptr) (void)hipHostFree(ptr_);
    ptr_ = TakeHandle(o.ptr_);
    device_ptr_ = TakeHandle(o.device_ptr_);
    size_ = TakeHandle(o.size_);
  }
  return *this;
}

StatusOr<PinnedBuffer> PinnedBuffer::Allocate(size_t size, bool mapped, const std::string& what) {
  PinnedBuffer b;
  const hipError_t err =
      hipHostMalloc(&b.ptr_, size == 0 ? 1 : size, mapped ? hipHostMallocMapped : hipHostMallocDefault);
  if (err != hipSuccess) {
    b.ptr_ = nullptr;
    return GpuStatus(err, "hipHostMalloc(" + what + ", " + std::to_string(size) + " bytes)");
  }
  b.size_ = size;
  if (mapped) {
    GPU_RETURN_IF_ERROR(hipHostGetDevicePointer(&b.device_ptr_, b.ptr_, 0),
                        "hipHostGetDevicePointer(" + what + ")");
  }
  return b;
}

Status PinnedBuffer::Reserve(size_t size, const std::string& what) {
  if (ptr_ != nullptr && size_ >= size) return OkStatus();
  const bool mapped = device_ptr_ != nullptr;
  *this = PinnedBuffer();
  ASSIGN_OR_RETURN(*this, Allocate(size, mapped, what));
  return OkStatus();
}

HostRegistration::~HostRegistration() {
  if (ptr_ != nullptr) (void)hipHostUnregister(ptr_);
}

HostRegistration& HostRegistration::operator=(HostRegistration&& o) noexcept {
  if (this != &o) {
    if (ptr_ != nullptr) (void)hipHostUnregister(ptr_);
    ptr_ = TakeHandle(o.ptr_);
    size_ = TakeHandle(o.size_);
  }
  return *this;
}

StatusOr<HostRegistration> HostRegistration::Register(void* ptr, size_t size, const std::string& what) {
  HostRegistration r;
  const std::string call = "hipHostRegister(" + what + ", " + std::to_string(size) + " bytes)";
  hipError_t e = hipHostRegister(ptr, size, hipHostRegisterDefault);
#ifdef hipHostRegisterReadOnly
  // Memory mapped read-only (a client's sealed shared-memory frames) needs the read-only
  // flag on a GPU that cannot use the host's page tables (CUDA's cudaHostRegister docs);
  // the device only ever reads what is registered here, so the flag costs nothing.
  if (e != hipSuccess) {
    (void)hipGetLastError();  // the first try's error is not this thread's next one
    e = hipHostRegister(ptr, size, hipHostRegisterReadOnly);
  }
#endif
  GPU_RETURN_IF_ERROR(e, call);
  r.ptr_ = ptr;
  r.size_ = size;
  return r;
}

Stream::~Stream() {
  if (s_ != nullptr) (void)hipStreamDestroy(s_);
}

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (s_ != nullptr) (void)hipStreamDestroy(s_);
    s_ = TakeHandle(o.s_);
  }
  return *this;
}

StatusOr<Stream> Stream::Create(int priority, const std::string& what) {
  Stream s;
  GPU_RETURN_IF_ERROR(hipStreamCreateWithPriority(&s.s_, hipStreamNonBlocking, priority),
                      "hipStreamCreateWithPriority(" + what + ")");
  return s;
}

Event::~Event() {
  if (e_ != nullptr) (void)hipEventDestroy(e_);
}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (e_ != nullptr) (void)hipEventDestroy(e_);
    e_ = TakeHandle(o.e_);
  }
  return *this;
}

StatusOr<Event> Event::Create(bool timing, const std::string& what) {
  Event e;
  GPU_RETURN_IF_ERROR(hipEventCreateWithFlags(&e.e_, timing ? 0 : hipEventDisableTiming),
                      "hipEventCreateWithFlags(" + what + ")");
  return e;
}

int HighestStreamPriority() {
  int least = 0, greatest = 0;
  if (hipDeviceGetStreamPriorityRange(&least, &greatest) != hipSuccess) return 0;
  return greatest;
}

}  // namespace conveyor
