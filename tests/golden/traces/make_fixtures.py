#!/usr/bin/python3
"""Writes the hand-designed torch.profiler (Kineto) trace fixtures of this folder.

The event layout follows kineto libkineto/src/output_json.cpp (ph "X" events with cat, name, pid,
tid, ts/dur in microseconds, args with "External id" / "correlation" / "Sequence number" /
"Fwd thread id" / "Input Dims"; "ac2g" flow events; deviceProperties) and PyTorch's Python tracer
("nn.Module: <Class>_<n>" python_function events, torch/csrc/profiler/collection.cpp). Every
timestamp and duration is chosen by hand below, so that tests/unit/config/TraceImport_test.cpp can
state the expected per-layer times as sums of the numbers written here.

The model (tiny3.json): Net.forward(x) = fc(flatten(block(x))), block = Sequential(conv, relu), then
a CrossEntropyLoss outside the model.  Layers: block.0 (conv2d), block.1 (elementwise), fc (linear).

    tiny3_gpu.json            two iterations (the first with every kernel twice as long), GPU kernels
                              launched through cudaLaunchKernel/cudaMemsetAsync, backward on the
                              autograd device thread, an NCCL kernel from DDP's hook
    tiny3_cpu.json            one iteration, CPU only (no deviceProperties, no kernels), backward on
                              the main thread, a gloo allreduce cpu_op inside an AccumulateGrad
    tiny3_extra_layer_cpu.json  tiny3_cpu.json with one more module call (Dropout) in the forward:
                              4 layer calls against the model's 3
    legacy_autograd_profiler.json  a real export of torch 1.13's legacy autograd profiler (Debian
                              python3-torch on the build machine): a plain JSON list

Regenerate with /usr/bin/python3 tests/golden/traces/make_fixtures.py (deterministic).
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
PID = 4242           # the training process
MAIN = 4242          # its main thread
BWD = 4301           # autograd engine's device thread (GPU traces)
STREAM = 7           # compute stream
NCCL_STREAM = 20     # NCCL's stream


class Trace:
    def __init__(self, gpu):
        self.gpu = gpu
        self.events = []
        self.ext = 0
        self.stream_free = {STREAM: 0.0, NCCL_STREAM: 0.0}
        self.py_id = 0

    def x(self, cat, name, ts, dur, tid=MAIN, pid=PID, **args):
        ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": float(ts), "dur": float(dur)}
        if args:
            ev["args"] = args
        self.events.append(ev)
        return ev

    def module(self, name, ts, end, tid=MAIN):
        self.py_id += 1
        return self.x("python_function", "nn.Module: " + name, ts, end - ts, tid,
                      **{"Python parent id": max(0, self.py_id - 1), "Python id": self.py_id,
                         "Python module id": 0, "Python thread": 0})

    def pyfn(self, name, ts, end, tid=MAIN):
        self.py_id += 1
        return self.x("python_function", name, ts, end - ts, tid,
                      **{"Python parent id": max(0, self.py_id - 1), "Python id": self.py_id, "Python thread": 0})

    def op(self, name, ts, end, tid=MAIN, seq=None, fwd_tid=0, dims=None):
        self.ext += 1
        args = {"External id": self.ext, "Record function id": 0, "Ev Idx": len(self.events)}
        if dims is not None:
            args["Input Dims"] = dims
        if seq is not None:
            args["Fwd thread id"] = fwd_tid
            args["Sequence number"] = seq
        self.x("cpu_op", name, ts, end - ts, tid, **args)
        return self.ext

    def launch(self, ext, corr, ts, kname, kdur, tid=MAIN, api="cudaLaunchKernel", cat="kernel",
               stream=STREAM):
        """A launch call at ts (2 us long) by the cpu_op `ext`, and the GPU event it queues."""
        if not self.gpu:
            return
        self.x("cuda_runtime", api, ts, 2, tid, **{"External id": ext, "cbid": 211, "correlation": corr})
        start = max(ts + 4, self.stream_free[stream])
        self.stream_free[stream] = start + kdur
        self.x(cat, kname, start, kdur, pid=0, tid=stream,
               **{"External id": ext, "queued": 0, "device": 0, "context": 1, "stream": stream,
                  "correlation": corr, "registers per thread": 32, "shared memory": 0,
                  "grid": [8, 1, 1], "block": [128, 1, 1]})
        self.events.append({"ph": "s", "id": corr, "pid": PID, "tid": tid, "ts": float(ts),
                            "cat": "ac2g", "name": "ac2g"})
        self.events.append({"ph": "f", "id": corr, "pid": 0, "tid": stream, "ts": float(start),
                            "cat": "ac2g", "name": "ac2g", "bp": "e"})


def iteration(t, T, S, C, k, bwd_tid, extra_layer=False, comm=True):
    """One training step at time offset T; S: first sequence number; C: first correlation id;
    k: kernel duration factor."""
    t.x("user_annotation", "ProfilerStep#%d" % (S // 10), T - 1, 275)
    t.pyfn("train.py(41): train_step", T - 0.5, T + 272)
    # ---- forward: Net_0 [0, 100]
    t.module("Net_0", T + 0, T + 100)
    t.module("Sequential_0", T + 2, T + 60)
    t.module("Conv2d_0", T + 3, T + 30)
    t.pyfn("torch/nn/modules/conv.py(463): forward", T + 3.5, T + 29)
    e = t.op("aten::conv2d", T + 4, T + 28, seq=S, dims=[[2, 3, 8, 8], [4, 3, 3, 3], [4], [], [], [], []])
    t.op("aten::convolution", T + 5, T + 27, seq=S)
    t.op("aten::_convolution", T + 6, T + 26)
    e = t.op("aten::cudnn_convolution", T + 7, T + 20)
    t.launch(e, C + 1, T + 8, "sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nhwckrsc_nchw", 12 * k)
    e = t.op("aten::add_", T + 21, T + 25)
    t.launch(e, C + 2, T + 22, "void at::native::elementwise_kernel<128, 2>(...)", 8 * k)
    t.module("ReLU_0", T + 32, T + 50)
    e = t.op("aten::relu", T + 33, T + 45, seq=S + 1)
    t.launch(e, C + 3, T + 35, "void at::native::vectorized_elementwise_kernel<4, clamp_min>(...)", 5 * k)
    if extra_layer:
        t.module("Dropout_0", T + 51, T + 59)
        t.op("aten::dropout", T + 52, T + 58, seq=S + 1)
        t.op("aten::native_dropout", T + 53, T + 57, seq=S + 1)
    # the root's own op: a view, so Net is no layer; its ViewBackward0 goes to the next layer (fc)
    t.op("aten::flatten", T + 61, T + 64, seq=S + 2)
    t.op("aten::view", T + 62, T + 63, seq=S + 2)
    t.module("Linear_0", T + 65, T + 95)
    t.op("aten::linear", T + 66, T + 94, seq=S + 3)
    t.op("aten::t", T + 67, T + 69, seq=S + 3)
    t.op("aten::transpose", T + 67.5, T + 68.5)
    e = t.op("aten::addmm", T + 70, T + 90, seq=S + 4)
    t.launch(e, C + 4, T + 72, "ampere_sgemm_32x32_sliced1x4_tn", 15 * k)
    t.launch(e, C + 5, T + 80, "Memset (Device)", 2 * k, api="cudaMemsetAsync", cat="gpu_memset")
    # ---- the loss, outside the model
    t.module("CrossEntropyLoss_0", T + 101, T + 120)
    t.op("aten::cross_entropy_loss", T + 102, T + 119, seq=S + 5)
    e = t.op("aten::log_softmax", T + 103, T + 110, seq=S + 5)
    t.launch(e, C + 6, T + 104, "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4>(...)", 3 * k)
    e = t.op("aten::nll_loss_nd", T + 111, T + 118, seq=S + 6)
    t.launch(e, C + 7, T + 112, "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d(...)",
             2 * k)
    t.op("aten::ones_like", T + 122, T + 124)

    # ---- backward, one evaluate_function per node
    def node(name, ts, end, seq=None, kernels=(), comm_op=None):
        t.op("autograd::engine::evaluate_function: " + name, ts, end, tid=bwd_tid)
        e = t.op(name, ts + 1, end - 1, tid=bwd_tid, seq=seq, fwd_tid=1)
        for corr, lts, kname, kdur in kernels:
            t.launch(e, corr, lts, kname, kdur * k, tid=bwd_tid)
        if comm_op:
            cts, cend, ccorr = comm_op
            ce = t.op("c10d::allreduce_", cts, cend, tid=bwd_tid)
            t.launch(ce, ccorr, cts, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                     50, tid=bwd_tid, stream=NCCL_STREAM)

    node("NllLossBackward0", T + 130, T + 140, S + 6, [(C + 101, T + 133, "nll_loss_backward_reduce_cuda_kernel_2d", 4)])
    node("LogSoftmaxBackward0", T + 141, T + 150, S + 5, [(C + 102, T + 143, "cunn_SoftMaxBackward", 3)])
    node("AddmmBackward0", T + 151, T + 180, S + 4,
         [(C + 103, T + 155, "ampere_sgemm_64x32_sliced1x4_nn", 20), (C + 104, T + 160, "ampere_sgemm_32x32_sliced1x4_nt", 18),
          (C + 105, T + 165, "void at::native::reduce_kernel<128, 4>(...)", 4)])
    node("torch::autograd::AccumulateGrad", T + 181, T + 186)
    node("TBackward0", T + 187, T + 192, S + 3)
    node("torch::autograd::AccumulateGrad", T + 193, T + 198, None,
         [(C + 106, T + 195, "void at::native::vectorized_elementwise_kernel<4, add>(...)", 1)])
    node("ViewBackward0", T + 199, T + 203, S + 2)
    node("ReluBackward0", T + 204, T + 215, S + 1, [(C + 107, T + 207, "threshold_backward_kernel", 6)])
    node("ConvolutionBackward0", T + 216, T + 260, S,
         [(C + 108, T + 220, "sm80_xmma_wgrad_implicit_gemm_f32f32", 25), (C + 109, T + 225, "reduce_bias_grad", 5)])
    node("torch::autograd::AccumulateGrad", T + 261, T + 265, None, (),
         (T + 262.5, T + 263.5, C + 110) if comm else None)
    node("torch::autograd::AccumulateGrad", T + 266, T + 270)


def header(t, gpu):
    doc = {"schemaVersion": 1,
           "deviceProperties": [] if not gpu else [
               {"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85031714816, "computeMajor": 8,
                "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
                "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 108,
                "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 166912,
                "sharedMemPerMultiprocessor": 167936}],
           "record_shapes": 1, "with_stack": 1, "with_modules": 1,
           "displayTimeUnit": "ms", "baseTimeNanoseconds": 1715000000000000000}
    meta = [{"name": "process_name", "ph": "M", "ts": 0.0, "pid": PID, "tid": 0, "args": {"name": "python3"}},
            {"name": "thread_name", "ph": "M", "ts": 0.0, "pid": PID, "tid": MAIN, "args": {"name": "thread 4242 (python3)"}}]
    if gpu:
        meta.append({"name": "process_name", "ph": "M", "ts": 0.0, "pid": 0, "tid": 0, "args": {"name": "python3"}})
        meta.append({"name": "process_labels", "ph": "M", "ts": 0.0, "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}})
        meta.append({"name": "thread_name", "ph": "M", "ts": 0.0, "pid": 0, "tid": STREAM, "args": {"name": "stream 7"}})
    doc["traceEvents"] = meta + t.events + [
        {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 3000.0}]
    doc["traceName"] = "/tmp/tiny3_trace.json"
    return doc


def write(name, doc):
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def main():
    t = Trace(gpu=True)
    iteration(t, 1000.0, 10, 100, 2, BWD)   # warm-up step: every kernel twice as long
    iteration(t, 2000.0, 20, 300, 1, BWD)   # the step the importer must use
    write("tiny3_gpu.json", header(t, True))
    t = Trace(gpu=False)
    iteration(t, 1000.0, 10, 100, 1, MAIN)
    write("tiny3_cpu.json", header(t, False))
    t = Trace(gpu=False)
    iteration(t, 1000.0, 10, 100, 1, MAIN, extra_layer=True)
    write("tiny3_extra_layer_cpu.json", header(t, False))


if __name__ == "__main__":
    main()
