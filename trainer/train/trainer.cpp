#include "trainer/train/trainer.h"

#include "trainer/train/step_runner.h"

#include <chrono>
#include <cmath>
#include <set>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>

#include "trainer/device.h"
#include "trainer/error.h"
#include "trainer/io/safetensors.h"
#include "trainer/io/text.h"
#include "trainer/train/heldout.h"
#include "trainer/train/limits.h"

namespace onegpu::trainer {

void TrainOptions::validate() const {
  auto bounded = [](long long v, const char* flag, long long hi) {
    if (v <= 0) throw Error(std::string(flag) + " must be positive, got " + std::to_string(v));
    if (v > hi) throw Error(std::string(flag) + " must be at most " + std::to_string(hi) + ", got " + std::to_string(v));
  };
  bounded(steps, "--steps", limits::kMaxSteps);
  bounded(batch, "--batch", limits::kMaxBatch);
  bounded(microbatches, "--microbatches", limits::kMaxBatch);
  bounded(threads, "--threads", limits::kMaxThreads);
  bounded(eval_rows, "eval_rows", limits::kMaxEvalRows);
  if (device != "cpu" && device != "cuda") throw Error("device must be cpu or cuda, got '" + device + "'");
  if (batch % microbatches != 0)
    throw Error("--batch (" + std::to_string(batch) + ") must be a multiple of --microbatches (" +
                std::to_string(microbatches) + ")");
  if (threads <= 0) throw Error("thread count must be positive");
  if (eval_rows <= 0) throw Error("eval rows must be positive");
  optim.validate();
}

Trainer::Trainer(ModelConfig model, const TrainOptions& opt, BpeTokenizer tok, const Corpus& corpus) {
  build(std::move(model), opt, std::move(tok), &corpus);
}

void Trainer::build(ModelConfig model, const TrainOptions& opt, BpeTokenizer tok, const Corpus* corpus) {
  opt_ = opt;
  opt_.optim.total_steps = opt_.steps;
  opt_.validate();
  model.vocab = (int)tok.vocab_size();
  model.validate();
  // Weights, one microbatch's activations and the held-out windows must fit, or the run would
  // grow until the kernel ends it: refuse it now, naming the flag that asks for the memory.
  {
    const std::uint64_t rows = (std::uint64_t)(opt_.batch / opt_.microbatches);
    const std::uint64_t need = limits::weight_bytes(model) + limits::activation_bytes(model, rows, model.seq_len);
    limits::require_memory(need,
                           "--batch " + std::to_string(opt_.batch) + " (" + std::to_string(rows) + " texts a microbatch)",
                           "use a smaller --batch or more --microbatches");
    limits::require_memory(limits::weight_bytes(model) + limits::activation_bytes(model, 1, model.seq_len) / 4 *
                                                             (std::uint64_t)opt_.eval_rows,
                           "evaluating " + std::to_string(opt_.eval_rows) + " held-out rows",
                           "the checkpoint's eval_rows is too large");
  }
  tok_ = std::move(tok);
  if (corpus) {
    train_ = TokenDataset::build(tok_, corpus->train);
    heldout_ = TokenDataset::build(tok_, corpus->heldout);
    if ((int)train_.tokens.size() < model.seq_len + 1)
      throw Error("corpus too small: the training text has " + std::to_string(train_.tokens.size()) +
                  " tokens, a text needs " + std::to_string(model.seq_len + 1));
  }
  if (opt_.device == "cuda") {
    backend_ = make_device_backend(tracker_);
  } else {
    auto cpu = std::make_unique<CpuBackend>(tracker_, opt_.threads);
    cpu_ = cpu.get();
    backend_ = std::move(cpu);
  }
  model_ = std::make_unique<Model>(model, *backend_, tracker_, opt_.seed);
  if (cpu_) split_ = std::make_unique<SplitStep>(*model_, tracker_, cpu_->pool(), opt_.batch / opt_.microbatches);
  data_rng_ = Rng(opt_.seed ^ 0xda7a5eedull);
  step_ = 0;
}

StepResult Trainer::step() {
  // The runner the pictures use, run to the end (on the CPU its forward and backward run on
  // every thread at once: SplitStep, bit for bit the pieces' numbers).
  StepRunner r(*this);
  r.run_all();
  return r.result();
}

double Trainer::heldout_loss() { return trainer::heldout_loss(*model_, heldout_, opt_.eval_rows); }

// ---- checkpoints ----

namespace {
constexpr const char* kFormat = "onegpu-checkpoint-1";

std::vector<std::int64_t> shape_of(const ParamTensor& t) {
  if (t.rows == 1) return {t.cols};
  return {t.rows, t.cols};
}

std::string options_to_string(const TrainOptions& o) {
  const auto& a = o.optim;
  std::string s;
  auto add = [&](const char* k, const std::string& v) { s += std::string(k) + "=" + v + ";"; };
  add("steps", std::to_string(o.steps));
  add("batch", std::to_string(o.batch));
  add("microbatches", std::to_string(o.microbatches));
  add("seed", std::to_string(o.seed));
  add("eval_rows", std::to_string(o.eval_rows));
  char buf[64];
  auto f = [&](float v) {
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return std::string(buf);
  };
  add("lr", f(a.lr));
  add("min_lr_ratio", f(a.min_lr_ratio));
  add("warmup_steps", std::to_string(a.warmup_steps));
  add("beta1", f(a.beta1));
  add("beta2", f(a.beta2));
  add("eps", f(a.eps));
  add("weight_decay", f(a.weight_decay));
  add("clip_norm", f(a.clip_norm));
  return s;
}

TrainOptions options_from_string(const std::string& s) {
  std::map<std::string, std::string> kv;
  std::size_t pos = 0;
  while (pos < s.size()) {
    auto end = s.find(';', pos);
    if (end == std::string::npos) end = s.size();
    auto item = s.substr(pos, end - pos);
    auto eq = item.find('=');
    if (eq == std::string::npos) throw Error("checkpoint: malformed training options");
    kv[item.substr(0, eq)] = item.substr(eq + 1);
    pos = end + 1;
  }
  auto get = [&](const char* k) -> std::string {
    auto it = kv.find(k);
    if (it == kv.end()) throw Error(std::string("checkpoint: training option '") + k + "' missing");
    return it->second;
  };
  // Every field strictly: the whole text, digits only for integers, finite for numbers.
  auto geti = [&](const char* k) {
    const std::string v = get(k);
    if (auto x = text::parse_int(v, 0, std::numeric_limits<int>::max())) return (int)*x;
    throw Error(std::string("checkpoint: training option '") + k + "' is not a whole number, got '" + text::printable(v) + "'");
  };
  auto getf = [&](const char* k) {
    const std::string v = get(k);
    if (auto x = text::parse_number(v)) return (float)*x;
    throw Error(std::string("checkpoint: training option '") + k + "' is not a finite number, got '" + text::printable(v) + "'");
  };
  TrainOptions o;
  o.steps = geti("steps");
  o.batch = geti("batch");
  o.microbatches = geti("microbatches");
  if (auto x = text::parse_u64(get("seed"))) o.seed = *x;
  else throw Error("checkpoint: training option 'seed' is not a whole number");
  o.eval_rows = geti("eval_rows");
  o.optim.lr = getf("lr");
  o.optim.min_lr_ratio = getf("min_lr_ratio");
  o.optim.warmup_steps = geti("warmup_steps");
  o.optim.beta1 = getf("beta1");
  o.optim.beta2 = getf("beta2");
  o.optim.eps = getf("eps");
  o.optim.weight_decay = getf("weight_decay");
  o.optim.clip_norm = getf("clip_norm");
  return o;
}
}  // namespace

void Trainer::save(const std::string& path) const {
  safetensors::File f;
  const auto& P = model_->params();
  for (const auto& t : P.tensors()) {
    auto shape = shape_of(t);
    auto n = (std::size_t)t.size();
    f.add_bf16(t.name, shape, std::span<const std::uint16_t>(P.weights.data() + t.offset, n));
    f.add_f32("optim.master." + t.name, shape, std::span<const float>(P.master.data() + t.offset, n));
    f.add_f32("optim.adam_m." + t.name, shape, std::span<const float>(P.adam_m.data() + t.offset, n));
    f.add_f32("optim.adam_v." + t.name, shape, std::span<const float>(P.adam_v.data() + t.offset, n));
  }
  f.metadata["format"] = kFormat;
  f.metadata["config"] = config_to_string(model_->config());
  f.metadata["step"] = std::to_string(step_);
  f.metadata["data_rng"] = std::to_string(data_rng_.state());
  f.metadata["train_options"] = options_to_string(opt_);
  f.metadata["tokenizer"] = tok_.serialize();
  safetensors::save(f, path);
}

namespace {
struct Loaded {
  safetensors::File file;
  ModelConfig cfg;
  TrainOptions opt;
  BpeTokenizer tok;
  int step = 0;
  std::uint64_t rng = 0;
};
Loaded open_checkpoint(const std::string& path) {
  Loaded L;
  L.file = safetensors::load(path);
  auto where = " in checkpoint " + path;
  auto meta = [&](const char* k) -> const std::string& {
    try {
      return L.file.meta(k);
    } catch (const Error&) {
      throw Error(std::string("missing '") + k + "'" + where + " (not an onegpu checkpoint?)");
    }
  };
  if (meta("format") != kFormat) throw Error("unsupported checkpoint format '" + text::printable(meta("format")) + "'" + where);
  try {
    L.cfg = config_from_string(meta("config"));
    L.opt = options_from_string(meta("train_options"));
    L.tok = BpeTokenizer::deserialize(meta("tokenizer"));
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + where);
  }
  // The same strict rule as every other field: "2abc" is not step 2.
  if (auto s = text::parse_int(meta("step"), 0, limits::kMaxSteps)) L.step = (int)*s;
  else throw Error("step '" + text::printable(meta("step")) + "' is not a whole number from 0 to " +
                   std::to_string(limits::kMaxSteps) + where);
  if (auto r = text::parse_u64(meta("data_rng"))) L.rng = *r;
  else throw Error("data_rng '" + text::printable(meta("data_rng")) + "' is not a whole number" + where);
  if ((std::size_t)L.cfg.vocab != L.tok.vocab_size())
    throw Error("the model's vocabulary does not match its tokenizer" + where);
  return L;
}
}  // namespace

void Trainer::load_state(const safetensors::File& f, bool with_optimizer) {
  // Called right after build() with the checkpoint's config; fills every array or throws.
  const std::string& path = f.source;
  auto& P = model_->params();
  // Every tensor is checked against the config: dtype, shape, finite values; and every tensor
  // in the file must be one the config accounts for (a 4-layer file read as 3 layers is refused).
  std::set<std::string> expected;
  auto check = [&](const std::string& name, const ParamTensor& t, safetensors::DType dtype) -> const safetensors::Tensor& {
    expected.insert(name);
    const auto& x = f.get(name);
    if (x.dtype != dtype)
      throw Error("tensor '" + text::printable(name) + "' is " + std::string(safetensors::dtype_name(x.dtype)) +
                  ", expected " + std::string(safetensors::dtype_name(dtype)) + " in checkpoint " + path);
    if (x.shape != shape_of(t)) throw Error("tensor '" + text::printable(name) + "' has the wrong shape in checkpoint " + path);
    return x;
  };
  auto copy = [&](const std::string& name, const ParamTensor& t, float* dst, bool non_negative) {
    auto v = check(name, t, safetensors::DType::F32).f32();
    for (float x : v)
      if (!std::isfinite(x) || (non_negative && x < 0.f))
        throw Error("tensor '" + text::printable(name) + "' holds " + (std::isfinite(x) ? "a negative value" : "Inf or NaN") +
                    " in checkpoint " + path);
    std::memcpy(dst, v.data(), v.size() * sizeof(float));
  };
  for (const auto& t : P.tensors()) {
    copy("optim.master." + t.name, t, P.master.data() + t.offset, false);
    if (with_optimizer) {
      copy("optim.adam_m." + t.name, t, P.adam_m.data() + t.offset, false);
      copy("optim.adam_v." + t.name, t, P.adam_v.data() + t.offset, true);
    } else {
      for (const char* k : {"optim.adam_m.", "optim.adam_v."})
        if (f.contains(k + t.name)) check(k + t.name, t, safetensors::DType::F32);
    }
    if (!f.contains(t.name)) throw Error("missing tensor '" + t.name + "' in checkpoint " + path);
    for (std::uint16_t b : check(t.name, t, safetensors::DType::BF16).bf16())
      if ((b & 0x7f80) == 0x7f80) throw Error("tensor '" + t.name + "' holds Inf or NaN in checkpoint " + path);
  }
  for (const auto& name : f.names())
    if (!expected.count(name))
      throw Error("tensor '" + text::printable(name) + "' is not part of model " + text::printable(model_->config().name) +
                  " as its config describes it (" + std::to_string(model_->config().n_layers) +
                  " layers) in checkpoint " + path);
  P.sync_weights_from_master();
}

std::unique_ptr<Trainer> Trainer::resume(const std::string& path, const Corpus& corpus, int steps, int threads,
                                         const std::string& device) {
  Loaded L = open_checkpoint(path);
  if (steps < 0) throw Error("--steps must be positive, got " + std::to_string(steps));
  TrainOptions opt = L.opt;
  if (steps > 0) opt.steps = steps;  // else the checkpoint's own
  opt.threads = threads;
  opt.device = device;
  limits::require_steps_reach(opt.steps, L.step);
  std::unique_ptr<Trainer> t(new Trainer());
  t->build(L.cfg, opt, L.tok, &corpus);
  t->load_state(L.file, true);
  t->step_ = L.step;
  t->data_rng_.set_state(L.rng);
  return t;
}

std::unique_ptr<Trainer> Trainer::load_for_inference(const std::string& path, int threads) {
  Loaded L = open_checkpoint(path);
  TrainOptions opt = L.opt;
  opt.threads = threads;
  opt.steps = std::max(opt.steps, std::max(1, L.step));
  std::unique_ptr<Trainer> t(new Trainer());
  t->build(L.cfg, opt, L.tok, nullptr);
  t->load_state(L.file, false);
  t->step_ = L.step;
  return t;
}

}  // namespace onegpu::trainer
