//===- ClusterTest.cpp - cluster files read strictly ----------------------===//

#include "lib/compile/Cluster.h"
#include "perfmodel/DeviceAttr.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

namespace {

/// The error of parsing `json`, or "" when it parses.
std::string errorOf(const std::string &json) {
  whale::Cluster cluster;
  std::string error;
  return whale::parseClusterJson(json, "c.json", cluster, error) ? ""
                                                                  : error;
}

void expectError(const std::string &json, const std::string &part) {
  std::string error = errorOf(json);
  EXPECT_NE(error.find(part), std::string::npos)
      << json << "\n  gave: " << (error.empty() ? "no error" : error);
}

std::string oneDevice(const std::string &fields) {
  return R"({"nodes": [{"devices": [{"kind": "cpu")" + fields + "}]}]}";
}

TEST(ClusterFile, FieldsOfTheWrongTypeAreErrors) {
  expectError(oneDevice(R"(, "count": "2")"),
              "c.json: nodes[0].devices[0].count must be a whole number from "
              "1 to 4096, not a string");
  expectError(oneDevice(R"(, "count": 2.5)"), "count must be a whole number");
  expectError(oneDevice(R"(, "threads": true)"),
              "threads must be a whole number from 1 to 1024, not true");
  expectError(oneDevice(R"(, "flops": "1e12")"), "flops must be a finite");
  expectError(oneDevice(R"(, "kind": 3)"), "kind must be a string");
  expectError(R"({"nodes": [{"name": 7, "devices": [{}]}]})",
              "nodes[0].name must be a non-empty string, not 7");
  expectError(R"({"nodes": {"devices": []}})",
              "c.json: nodes must be an array, not an object");
}

TEST(ClusterFile, MisspeltFieldsAreNamed) {
  expectError(oneDevice(R"(, "threds": 2)"),
              "c.json: nodes[0].devices[0]: unknown field \"threds\" (did you "
              "mean \"threads\"?)");
  expectError(R"({"nodes": [{"devices": [{}]}], "link": {}})",
              "unknown field \"link\" (did you mean \"links\"?)");
  expectError(
      R"({"nodes": [{"devices": [{}]}], "links": {"inter_node": {"bandwith": 1e9}}})",
      "links.inter_node: unknown field \"bandwith\"");
}

TEST(ClusterFile, NumbersMustBeFinite) {
  // 1e999 parses as infinity.
  expectError(oneDevice(R"(, "flops": 1e999)"),
              "flops must be a finite number from 0 to 1e+21, not infinity");
  expectError(
      R"({"nodes": [{"devices": [{}]}], "links": {"inter_node": {"bandwidth": 1e999}}})",
      "bandwidth must be a finite number");
  expectError(
      R"({"nodes": [{"devices": [{}]}], "links": {"intra_node": {"latency": -1}}})",
      "latency must be a finite number from 0 to 1000, not -1");
}

TEST(ClusterFile, NoMemoryIsNotZeroMemory) {
  expectError(oneDevice(R"(, "memory": 0)"),
              "memory must be more than 0 bytes");
  expectError(oneDevice(R"(, "memory": "0GiB")"),
              "memory must be more than 0 bytes");
  whale::Cluster cluster;
  std::string error;
  EXPECT_FALSE(whale::parseCluster("cpu:2@mem=0", cluster, error));
  EXPECT_NE(error.find("mem must be a size above 0"), std::string::npos)
      << error;
  EXPECT_EQ(errorOf(oneDevice(R"(, "memory": "2GiB")")), "");
}

TEST(ClusterFile, NodeNamesAreUnique) {
  expectError(
      R"({"nodes": [{"name": "a", "devices": [{}]}, {"name": "a", "devices": [{}]}]})",
      "nodes[1]: a node named \"a\" is named twice");
  // Copies are named a0, a1, ...: a node named a1 besides them clashes.
  expectError(
      R"({"nodes": [{"name": "a", "count": 2, "devices": [{}]}, {"name": "a1", "devices": [{}]}]})",
      "a node named \"a1\" is named twice");
  EXPECT_EQ(
      errorOf(
          R"({"nodes": [{"name": "a", "count": 2, "devices": [{}]}, {"name": "b", "devices": [{}]}]})"),
      "");
}

TEST(ClusterFile, TheDeviceLimitCoversEveryEntry) {
  // 17 entries of 4096 devices: each entry is within its own bound, all
  // together are not.
  std::string devices;
  for (int i = 0; i < 17; ++i)
    devices += std::string(i ? "," : "") + R"({"count": 4096})";
  expectError(R"({"nodes": [{"devices": [)" + devices + "]}]}",
              "more than 65536 devices in all");
  std::string list;
  for (int i = 0; i < 17; ++i)
    list += std::string(i ? "," : "") + "cpu:4096";
  whale::Cluster cluster;
  std::string error;
  EXPECT_FALSE(whale::parseCluster(list, cluster, error));
  EXPECT_NE(error.find("more than 65536 devices in all"), std::string::npos)
      << error;
  EXPECT_TRUE(whale::parseCluster("cpu:4096,cpu:4096", cluster, error))
      << error;
}

TEST(ClusterFile, SharesOfOneGpuAreDevicesOfTheirOwn) {
  // The short form: two devices on GPU 0, a third and two thirds of an
  // H200's 132 SMs, priced at their shares of its data sheet.
  whale::Cluster c;
  std::string error;
  ASSERT_TRUE(whale::parseCluster(
      "cuda:0@model=H200,sms=40,cuda:0@sms=88,model=H200", c, error))
      << error;
  ASSERT_EQ(c.devices.size(), 2u);
  EXPECT_EQ(c.devices[0].sms, 40);
  EXPECT_EQ(c.devices[1].sms, 88);
  EXPECT_EQ(c.devices[0].model, "H200");
  EXPECT_DOUBLE_EQ(c.devices[0].flops, 67e12 * 40 / 132);
  EXPECT_DOUBLE_EQ(c.devices[1].flops, 67e12 * 88 / 132);
  EXPECT_EQ(c.devices[0].memory, int64_t(141e9)); // the sheet's
  EXPECT_EQ(whale::runtimeDeviceName(c.devices[0], 0), "cuda:0@sms=40");
  EXPECT_EQ(whale::runtimeDeviceName(c.devices[1], 1), "cuda:0@sms=88");
  // The JSON form says the same, and is read back alike.
  whale::Cluster again;
  ASSERT_TRUE(
      whale::parseClusterJson(whale::clusterJson(c), "c.json", again, error))
      << error;
  EXPECT_EQ(again.devices[1].sms, 88);
  EXPECT_DOUBLE_EQ(again.devices[1].flops, c.devices[1].flops);
  whale::Cluster a100;
  ASSERT_TRUE(whale::parseClusterJson(
      R"({"nodes": [{"devices": [{"kind": "cuda", "model": "A100-80GB",
          "sms": 54}]}]})",
      "c.json", a100, error))
      << error;
  EXPECT_DOUBLE_EQ(a100.devices[0].flops, 19.5e12 / 2);
}

TEST(ClusterFile, ContextsOfOneGpuArePricedAsItsShares) {
  // Two contexts of GPU 0 beside GPU 1: each context has half of GPU 0
  // while both run, which their rates and models say; the runtime still
  // opens plain contexts.
  whale::Cluster c;
  std::string error;
  ASSERT_TRUE(whale::parseCluster(
      "cuda:0@model=H200,cuda:0@model=H200,cuda:1@model=H200", c, error))
      << error;
  ASSERT_EQ(c.devices.size(), 3u);
  EXPECT_EQ(c.devices[0].contexts, 2);
  EXPECT_EQ(c.devices[1].contexts, 2);
  EXPECT_EQ(c.devices[2].contexts, 1);
  EXPECT_EQ(whale::runtimeDeviceName(c.devices[1], 1), "cuda:0");
  const whale::perf::DeviceDescription half = whale::describe(c.devices[0], 1);
  EXPECT_DOUBLE_EQ(whale::perf::rateOf(half), 67e12 / 2);
  const whale::perf::DeviceModel m = whale::perf::deviceModelOf(half);
  EXPECT_EQ(m.name, "H200@contexts=2");
  EXPECT_EQ(m.parallelUnits, 66);
  EXPECT_DOUBLE_EQ(whale::perf::rateOf(whale::describe(c.devices[2], 1)),
                   67e12);
  std::vector<double> rates = whale::deviceRates(c, 1);
  EXPECT_DOUBLE_EQ(rates[0], rates[2] / 2);
  // Read back from its JSON form, GPU 0 still holds both.
  whale::Cluster again;
  ASSERT_TRUE(
      whale::parseClusterJson(whale::clusterJson(c), "c.json", again, error))
      << error;
  EXPECT_EQ(again.devices[0].contexts, 2);
  EXPECT_EQ(again.devices[2].ordinal, 1);
  EXPECT_EQ(again.devices[2].contexts, 1);
  // Shares of the SMs are priced by their SMs, not as contexts; a CPU
  // device has none.
  ASSERT_TRUE(whale::parseCluster("cuda:0@sms=40,cuda:0,cpu:2,cpu:2", c, error))
      << error;
  for (const whale::DeviceSpec &d : c.devices)
    EXPECT_EQ(d.contexts, 1);
}

TEST(ClusterFile, SharesAreForGpusAndWithinThem) {
  whale::Cluster c;
  std::string error;
  auto refused = [&](const std::string &spec, const std::string &part) {
    EXPECT_FALSE(whale::parseCluster(spec, c, error)) << spec;
    EXPECT_NE(error.find(part), std::string::npos) << spec << ": " << error;
  };
  refused("cpu:2@sms=8", "sms is a GPU's share of its SMs, for cuda devices");
  refused("cuda:0@sms=0", "sms must be a whole number of SMs from 1 to 1024");
  refused("cuda:0@sms=many", "not 'many'");
  refused("cuda:0@model=H200,sms=140",
          "cuda:0: sms=140 is more than the H200's 132 SMs");
  refused("cuda:0@model=B300", "unknown GPU model 'B300' (known: ");
  refused("cpu:1@model=H200", "model names a GPU's data sheet, for cuda");
  refused("cpu:1@membw=fast",
          "membw must be the memory's bytes a second (membw=40e9), not "
          "'fast'");
  refused("cpu:1@membw=0", "membw must be the memory's bytes a second");
  refused("cpu:1@colour=red",
          "unknown device option 'colour' (known: threads, mem, flops, membw, "
          "share)");
  expectError(oneDevice(R"(, "sms": 8)"),
              "\"sms\" is a GPU's share of its SMs, for kind \"cuda\"");
  expectError(oneDevice(R"(, "memory_bandwidth": -5)"), "memory_bandwidth");
  expectError(R"({"nodes": [{"devices": [{"kind": "cuda", "sms": 0}]}]})",
              "sms must be a whole number from 1 to 1024");
  expectError(R"({"nodes": [{"devices": [{"kind": "cuda", "model": "T4",
                  "sms": 48}]}]})",
              "sms=48 is more than the T4's 40 SMs");
}

// cpu:N@share=S: the part of its threads' cores' time the kernel gives a
// CPU device (runtime/core/CpuShare.h); priced as that part of its rate,
// named so to the runtime, kept by the cluster's JSON.
TEST(ClusterFile, ACpuShareIsItsPartOfTheTimeAndPricedSo) {
  whale::Cluster c;
  std::string error;
  ASSERT_TRUE(whale::parseCluster("cpu:1,cpu:1@share=0.25", c, error)) << error;
  ASSERT_EQ(c.devices.size(), 2u);
  EXPECT_EQ(c.devices[0].cpuShare, 1);
  EXPECT_EQ(c.devices[1].cpuShare, 0.25);
  EXPECT_EQ(whale::runtimeDeviceName(c.devices[0], 0), "cpu:0");
  EXPECT_EQ(whale::runtimeDeviceName(c.devices[1], 1), "cpu:1@share=0.25");
  std::vector<double> rates = whale::deviceRates(c, 1);
  EXPECT_DOUBLE_EQ(rates[1], rates[0] / 4);
  whale::Cluster again;
  ASSERT_TRUE(
      whale::parseClusterJson(whale::clusterJson(c), "c.json", again, error))
      << error;
  EXPECT_EQ(again.devices[1].cpuShare, 0.25);
  auto refused = [&](const std::string &spec, const std::string &part) {
    EXPECT_FALSE(whale::parseCluster(spec, c, error)) << spec;
    EXPECT_NE(error.find(part), std::string::npos) << spec << ": " << error;
  };
  refused("cpu:1@share=0", "share must be a number above 0 and at most 1");
  refused("cpu:1@share=1.5", "not '1.5'");
  refused("cuda:0@share=0.5",
          "share is a CPU device's part of its cores' time");
  expectError(R"({"nodes": [{"devices": [{"kind": "cuda", "share": 0.5}]}]})",
              "\"share\" is a CPU device's part of its cores' time");
}

} // namespace

namespace {

// A device crosses into the IR and back as one description: its place
// stays with the cluster, its kind, sheet, rate, threads, memory, share
// of its GPU and share of its cores' time travel (the rate as the one it
// is balanced by; a share the planner left behind priced the shared
// device's memory traffic at the whole core's bandwidth, issue 88).
TEST(ClusterFile, ADeviceIsTheSameDescriptionInTheIr) {
  whale::Cluster c;
  std::string error;
  ASSERT_TRUE(whale::parseCluster(
      "cuda:1@model=H200,cuda:1@sms=40,cpu:1@threads=3,mem=2GiB,"
      "cpu:1@threads=1,share=0.25,membw=4e9",
      c, error))
      << error;
  mlir::MLIRContext ctx;
  ctx.loadDialect<whale::WhaleDialect>();
  for (const whale::DeviceSpec &spec : c.devices) {
    const whale::perf::DeviceDescription d = whale::describe(spec, 5);
    whale::DeviceAttr attr = whale::perf::deviceAttrOf(&ctx, d);
    const whale::perf::DeviceDescription back =
        whale::perf::describeDevice(attr);
    EXPECT_EQ(back.gpu, spec.gpu);
    EXPECT_EQ(back.model, d.model);
    EXPECT_DOUBLE_EQ(back.flops, whale::perf::rateOf(d));
    EXPECT_DOUBLE_EQ(whale::perf::rateOf(back), whale::perf::rateOf(d));
    EXPECT_EQ(back.threads, d.threads);
    EXPECT_EQ(back.memory, d.memory);
    EXPECT_EQ(back.sms, d.sms);
    EXPECT_EQ(back.contexts, d.contexts);
    EXPECT_DOUBLE_EQ(back.cpuShare, d.cpuShare);
    EXPECT_DOUBLE_EQ(back.memoryBandwidth, d.memoryBandwidth);
    EXPECT_DOUBLE_EQ(whale::perf::deviceModelOf(back).memoryBandwidth,
                     whale::perf::deviceModelOf(d).memoryBandwidth);
  }
  EXPECT_DOUBLE_EQ(whale::describe(c.devices[3], 5).cpuShare, 0.25);
  // A measured bandwidth is the one the model prices memory traffic at
  // (already the share's); the file keeps it.
  EXPECT_DOUBLE_EQ(whale::perf::deviceModelOf(whale::describe(c.devices[3], 5))
                       .memoryBandwidth,
                   4e9);
  whale::Cluster back;
  ASSERT_TRUE(
      whale::parseClusterJson(whale::clusterJson(c), "c.json", back, error))
      << error;
  EXPECT_DOUBLE_EQ(back.devices[3].memoryBandwidth, 4e9);
  // The cluster's own fields: a CPU device with no threads takes the
  // run's share; a GPU is named by its kind.
  EXPECT_EQ(c.devices[2].threads, 3);
  EXPECT_EQ(whale::DeviceSpec().threads, 0);
  EXPECT_STREQ(c.devices[0].kind(), "cuda");
  EXPECT_STREQ(c.devices[2].kind(), "cpu");
  EXPECT_EQ(c.devices[0].contexts, 1); // one context with a share beside it
}

} // namespace
