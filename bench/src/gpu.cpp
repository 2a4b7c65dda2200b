#include "gpu.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <thread>

namespace ddpbench {

DeviceBuffer::DeviceBuffer(uint64_t bytes) : bytes_(bytes) {
  if (bytes > 0) CUDACHECK(cudaMalloc(&p_, bytes));
}
DeviceBuffer::~DeviceBuffer() {
  if (p_) cudaFree(p_);  // unchecked: destructors must not throw
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (p_) cudaFree(p_);
    p_ = o.p_;
    bytes_ = o.bytes_;
    o.p_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void GpuContext::init(int rank_, int nranks_, int device_, ncclComm_t comm_) {
  rank = rank_;
  nranks = nranks_;
  device = device_;
  nccl = comm_;
  CUDACHECK(cudaSetDevice(device));
  CUDACHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  CUDACHECK(cudaStreamCreateWithFlags(&comm, cudaStreamNonBlocking));
  CUBLASCHECK(cublasCreate(&cublas));
#ifdef DDPBENCH_HAVE_CUDNN
  CUDNNCHECK(cudnnCreate(&cudnn));
#endif
}

void GpuContext::destroy() {
  cudaSetDevice(device);
#ifdef DDPBENCH_HAVE_CUDNN
  if (cudnn) cudnnDestroy(cudnn);
#endif
  if (cublas) cublasDestroy(cublas);
  if (compute) cudaStreamDestroy(compute);
  if (comm) cudaStreamDestroy(comm);
  if (nccl) ncclCommDestroy(nccl);
  compute = comm = nullptr;
  cublas = nullptr;
  nccl = nullptr;
}

EventPool::EventPool(size_t n) : ev_(n, nullptr) {
  for (auto& e : ev_) CUDACHECK(cudaEventCreate(&e));
}
EventPool::~EventPool() {
  for (auto e : ev_)
    if (e) cudaEventDestroy(e);
}
double EventPool::seconds(size_t from, size_t to) const {
  float ms = 0.f;
  CUDACHECK(cudaEventElapsedTime(&ms, ev_[from], ev_[to]));
  return static_cast<double>(ms) * 1e-3;
}

std::vector<double> time_iterations(cudaStream_t stream, int warmup, int iters, const std::function<void()>& body) {
  for (int i = 0; i < warmup; ++i) body();
  EventPool ev(2 * static_cast<size_t>(iters));
  for (int i = 0; i < iters; ++i) {
    CUDACHECK(cudaEventRecord(ev[2 * static_cast<size_t>(i)], stream));
    body();
    CUDACHECK(cudaEventRecord(ev[2 * static_cast<size_t>(i) + 1], stream));
  }
  CUDACHECK(cudaStreamSynchronize(stream));
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) t.push_back(ev.seconds(2 * static_cast<size_t>(i), 2 * static_cast<size_t>(i) + 1));
  return t;
}

int device_count() {
  int n = 0;
  CUDACHECK(cudaGetDeviceCount(&n));
  if (n < 1) throw GpuError("no CUDA device visible (check CUDA_VISIBLE_DEVICES and the driver)");
  return n;
}

int resolve_ngpus(int requested) {
  const int n = device_count();
  if (requested == 0) return n;
  if (requested > n)
    throw ArgError("-g: " + std::to_string(requested) + " GPUs requested but only " + std::to_string(n) + " visible");
  return requested;
}

double RankGroup::max_over_ranks(int rank, double v) {
  shared[static_cast<size_t>(rank)] = v;
  barrier.arrive_and_wait();
  double m = shared[0];
  for (double x : shared) m = std::max(m, x);
  barrier.arrive_and_wait();
  return m;
}

double RankGroup::mean_over_ranks(int rank, double v) {
  shared[static_cast<size_t>(rank)] = v;
  barrier.arrive_and_wait();
  double sum = 0;
  for (double x : shared) sum += x;
  barrier.arrive_and_wait();
  return sum / static_cast<double>(shared.size());
}

namespace {
std::string version_string(int v) {  // CUDA encodes 1000 * major + 10 * minor
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}
}  // namespace

HardwareInfo query_hardware(int ngpus, int first) {
  HardwareInfo h;
  cudaDeviceProp prop{};
  CUDACHECK(cudaGetDeviceProperties(&prop, first));
  h.gpu_name = prop.name;
  h.sm_count = prop.multiProcessorCount;
  h.memory_bytes = prop.totalGlobalMem;
  h.compute_capability_major = prop.major;
  h.compute_capability_minor = prop.minor;
  int mem_clock_khz = 0, bus_width = 0;
  // cudaDeviceProp::memoryClockRate was removed in CUDA 13; the attribute remains.
  if (cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, first) != cudaSuccess) mem_clock_khz = 0;
  if (cudaDeviceGetAttribute(&bus_width, cudaDevAttrGlobalMemoryBusWidth, first) != cudaSuccess) bus_width = 0;
  cudaGetLastError();  // clear a failed attribute query
  h.hbm_bandwidth_Bps_peak = peak_memory_bandwidth(mem_clock_khz, bus_width);
  int drv = 0, rt = 0, nccl = 0;
  CUDACHECK(cudaDriverGetVersion(&drv));
  CUDACHECK(cudaRuntimeGetVersion(&rt));
  NCCLCHECK(ncclGetVersion(&nccl));
  h.driver_version = version_string(drv);
  h.cuda_runtime_version = version_string(rt);
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
  h.nccl_version =
      std::to_string(nccl / 10000) + "." + std::to_string((nccl % 10000) / 100) + "." + std::to_string(nccl % 100);
  h.ngpus = ngpus;
  h.nnodes = 1;
  h.gpus_per_node = ngpus;
  h.peer_access.assign(static_cast<size_t>(ngpus), std::vector<int>(static_cast<size_t>(ngpus), 1));
  for (int i = 0; i < ngpus; ++i) {
    char bus[32] = {0};
    CUDACHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, first + i));
    h.pci_bus_ids.push_back(bus);
    for (int j = 0; j < ngpus; ++j) {
      if (i == j) continue;
      int can = 0;
      CUDACHECK(cudaDeviceCanAccessPeer(&can, first + i, first + j));
      h.peer_access[static_cast<size_t>(i)][static_cast<size_t>(j)] = can;
    }
  }
  h.nvlink_note =
      "peer_access is cudaDeviceCanAccessPeer (1 = P2P over NVLink or PCIe); it does not distinguish NVLink from PCIe. "
      "Run `nvidia-smi topo -m` for the link types.";
  return h;
}

void run_on_gpus(int ngpus, const std::function<void(GpuContext&, RankGroup&)>& fn) {
  std::vector<ncclComm_t> comms(static_cast<size_t>(ngpus), nullptr);
  std::vector<int> devs;
  for (int i = 0; i < ngpus; ++i) devs.push_back(i);
  NCCLCHECK(ncclCommInitAll(comms.data(), ngpus, devs.data()));
  RankGroup group(ngpus);
  std::vector<std::thread> threads;
  for (int r = 0; r < ngpus; ++r) {
    threads.emplace_back([&, r] {
      GpuContext ctx;
      try {
        ctx.init(r, ngpus, r, comms[static_cast<size_t>(r)]);
        fn(ctx, group);
        CUDACHECK(cudaDeviceSynchronize());
        ctx.destroy();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "ddpbench: rank %d: %s\n", r, e.what());
        std::fflush(stderr);
        std::_Exit(1);
      }
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace ddpbench
