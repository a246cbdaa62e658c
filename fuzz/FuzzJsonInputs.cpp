//===- FuzzJsonInputs.cpp - libFuzzer target: cluster, profile, schedule --===//
//
// A cluster file, a short cluster spec, a profile database, an elastic
// schedule and a Hugging Face names file come from the user: any bytes must
// give a value or a located error, never a crash, a hang or an unbounded
// allocation (a node's `count` and a device's `count` are bounded, so a tiny
// file cannot ask for millions of devices; nesting is bounded before the JSON
// parser recurses).
//
//===----------------------------------------------------------------------===//

#include "lib/api/HfNames.h"
#include "lib/compile/Cluster.h"
#include "runtime/run/ElasticSchedule.h"
#include "sim/ProfileDb.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  std::string error;
  whale::Cluster cluster;
  (void)whale::parseClusterJson(text, "fuzz.json", cluster, error);
  whale::sim::ProfileDb db;
  if (db.parse(text, "fuzz.json", error)) {
    // What the simulator then asks of it: a product and an elementwise op
    // of sizes it may not hold, priced from their nearest neighbours.
    whale::sim::Event product, add;
    product.op = "whale.matmul";
    product.signature = "tensor<64x128xf32>, tensor<128x256xf32> -> "
                        "tensor<64x256xf32>";
    product.cost = {4194304, 229376, true, false, 1, 64, 256, 128};
    add.op = "whale.fused";
    add.signature = "tensor<8x64xf32> -> tensor<8x64xf32> {gelu(0) | 1}";
    add.cost.flops = add.cost.bytes = 4096;
    whale::sim::MeasuredTime measured = db.measuredTime();
    for (const whale::perf::DeviceModel &d :
         {*whale::perf::findGpuModel("H200"),
          whale::perf::cpuModel(1e10, 1, 0)})
      for (const whale::sim::Event &e : {product, add})
        (void)measured(e, d);
  }
  // As a names file, then asked for names of every shape a rule matches.
  whale::HfNames names;
  if (whale::HfNames::parse(text, "fuzz.json", names, error))
    for (const char *name :
         {"llama/tok", "llama/decoder_0/wq", "llama/decoder_12/w_down",
          "llama/decoder_01/wq", "", "{i}", "llama/decoder_/wq"})
      (void)names.place("llama", name, error);
  // As a short spec too, unless it could name a file to read.
  if (size < 512 && text.find('/') == std::string::npos &&
      text.find(".json") == std::string::npos) {
    whale::Cluster spec;
    (void)whale::parseCluster(text, spec, error);
  }
  // As an elastic schedule ("STEP SPEC" lines); its specs are checked as
  // written, not read as files.
  std::vector<whale::ScheduledChange> schedule;
  (void)whale::parseElasticSchedule(
      text, "fuzz.sched", whale::ChangeTarget::Devices, schedule, error);
  (void)whale::parseElasticSchedule(
      text, "fuzz.sched", whale::ChangeTarget::CompiledPlan, schedule, error);
  return 0;
}
