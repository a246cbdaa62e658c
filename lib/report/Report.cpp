//===- Report.cpp - a run as one HTML page --------------------------------===//

#include "lib/report/Report.h"

#include "support/InputFile.h"

#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <vector>

namespace whale {
namespace {

/// Input files may be large traces; bounded like every other input.
constexpr int64_t kMaxReportInput = int64_t(1) << 30;

std::string escape(const std::string &s) {
  std::string out;
  for (char c : s) {
    switch (c) {
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '&':
      out += "&amp;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

std::string num(double v, const char *fmt = "%.4g") {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

struct Row {
  double step = 0, loss = NAN, val = NAN, samples = NAN, lr = NAN;
};

bool readMetrics(const std::string &path, std::vector<Row> &rows,
                 std::string &error) {
  std::string text;
  error = rt::readRegularFile(path, "the metrics", kMaxReportInput, text);
  if (!error.empty())
    return false;
  std::istringstream lines(text);
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    llvm::Expected<llvm::json::Value> v = llvm::json::parse(line);
    const llvm::json::Object *o = v ? v->getAsObject() : nullptr;
    if (!o || !o->getNumber("step") || !o->getNumber("loss")) {
      if (!v)
        llvm::consumeError(v.takeError());
      error = path + ":" + std::to_string(n) +
              ": expected a JSON object with \"step\" and \"loss\" (as whale "
              "run --metrics writes)";
      return false;
    }
    Row r;
    r.step = *o->getNumber("step");
    r.loss = *o->getNumber("loss");
    r.val = o->getNumber("val_loss").value_or(NAN);
    r.samples = o->getNumber("samples_per_s").value_or(NAN);
    r.lr = o->getNumber("lr").value_or(NAN);
    rows.push_back(r);
  }
  if (rows.empty()) {
    error = path + ": no steps";
    return false;
  }
  return true;
}

/// A line chart of (x, y) series as inline SVG.
std::string
lineChart(const std::string &title,
          const std::vector<
              std::pair<std::string, std::vector<std::pair<double, double>>>>
              &series) {
  const double w = 560, h = 260, left = 56, right = 12, top = 28, bottom = 32;
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const auto &[name, pts] : series)
    for (auto [x, y] : pts)
      if (std::isfinite(y)) {
        x0 = std::min(x0, x), x1 = std::max(x1, x);
        y0 = std::min(y0, y), y1 = std::max(y1, y);
      }
  std::string svg = "<svg class=\"chart\" viewBox=\"0 0 " + num(w) + " " +
                    num(h) + "\"><text x=\"" + num(left) +
                    "\" y=\"18\" class=\"title\">" + escape(title) + "</text>";
  if (!std::isfinite(x0))
    return svg + "<text x=\"60\" y=\"120\">no data</text></svg>";
  if (x1 == x0)
    x1 = x0 + 1;
  if (y1 == y0) { // a constant (a fixed learning rate): a band around it
    double pad = std::max(std::abs(y0) * 0.1, 1e-12);
    y0 = std::max(y0 - pad, -DBL_MAX);
    y1 = std::min(y1 + pad, DBL_MAX);
  }
  // Positions from halves: the span of finite values as far apart as
  // -1e308 and 1e308 overflows to infinity, and the chart read NaN.
  auto X = [&](double x) {
    return left + (x / 2 - x0 / 2) / (x1 / 2 - x0 / 2) * (w - left - right);
  };
  auto Y = [&](double y) {
    return h - bottom -
           (y / 2 - y0 / 2) / (y1 / 2 - y0 / 2) * (h - top - bottom);
  };
  svg += "<line x1=\"" + num(left) + "\" y1=\"" + num(h - bottom) + "\" x2=\"" +
         num(w - right) + "\" y2=\"" + num(h - bottom) + "\" class=\"axis\"/>";
  svg += "<line x1=\"" + num(left) + "\" y1=\"" + num(top) + "\" x2=\"" +
         num(left) + "\" y2=\"" + num(h - bottom) + "\" class=\"axis\"/>";
  for (double f : {0.0, 0.5, 1.0}) {
    double yv = y0 * (1 - f) + y1 * f, xv = x0 * (1 - f) + x1 * f;
    svg += "<text x=\"4\" y=\"" + num(Y(yv) + 4) + "\" class=\"tick\">" +
           num(yv) + "</text>";
    svg += "<text x=\"" + num(X(xv) - 10) + "\" y=\"" + num(h - 12) +
           "\" class=\"tick\">" + num(xv, "%.0f") + "</text>";
  }
  static const char *colors[] = {"#2b6cb0", "#dd6b20", "#38a169"};
  for (size_t s = 0; s < series.size(); ++s) {
    std::string path;
    for (auto [x, y] : series[s].second)
      if (std::isfinite(y))
        path += (path.empty() ? "M" : " L") + num(X(x), "%.1f") + " " +
                num(Y(y), "%.1f");
    svg += "<path d=\"" + path + "\" fill=\"none\" stroke=\"" + colors[s % 3] +
           "\" stroke-width=\"1.5\"/>";
    svg += "<text x=\"" + num(w - 150) + "\" y=\"" + num(top + 14 * s + 4) +
           "\" fill=\"" + colors[s % 3] + "\" class=\"tick\">" +
           escape(series[s].first) + "</text>";
  }
  return svg + "</svg>";
}

struct Span {
  double start, end;
  bool comm;
};

struct Trace {
  std::map<int64_t, std::string> names;
  std::map<int64_t, std::vector<Span>> spans; ///< by rank (pid)
  double t0 = INFINITY, t1 = -INFINITY;
  /// The driver's steps (whale run --trace), in order; none in a predicted
  /// trace, which is one iteration.
  std::vector<Span> steps;
};

bool readTrace(const std::string &path, Trace &t, std::string &error) {
  std::string text;
  error = rt::readRegularFile(path, "the trace", kMaxReportInput, text);
  if (!error.empty())
    return false;
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(text);
  const llvm::json::Object *root = v ? v->getAsObject() : nullptr;
  const llvm::json::Array *events =
      root ? root->getArray("traceEvents") : nullptr;
  if (!events) {
    if (!v)
      error = path + ": " + llvm::toString(v.takeError());
    else
      error = path + ": expected a Chrome trace (an object with "
                     "\"traceEvents\")";
    return false;
  }
  for (const llvm::json::Value &e : *events) {
    const llvm::json::Object *o = e.getAsObject();
    if (!o)
      continue;
    auto ph = o->getString("ph");
    auto pid = o->getInteger("pid");
    if (!ph || !pid)
      continue;
    if (*ph == "M" && o->getString("name") == llvm::StringRef("process_name")) {
      if (const llvm::json::Object *args = o->getObject("args"))
        if (auto n = args->getString("name"))
          t.names[*pid] = n->str();
      continue;
    }
    auto cat = o->getString("cat");
    auto ts = o->getNumber("ts"), dur = o->getNumber("dur");
    if (*ph == "X" && ts && dur && cat && *cat == "driver" &&
        o->getString("name") == llvm::StringRef("step"))
      t.steps.push_back({*ts, *ts + *dur, false});
    // An untraced step (`--trace-every`) timed nothing but its length.
    if (*ph != "X" || !ts || !dur || !cat || *cat == "driver" ||
        *cat == "untraced")
      continue;
    // A collective run beside the rank's work (an overlapped all-reduce)
    // took none of the rank's time: what it did take is its wait.
    if (auto name = o->getString("name");
        name && name->starts_with("overlapped "))
      continue;
    t.spans[*pid].push_back({*ts, *ts + *dur, *cat == "communication"});
    t.t0 = std::min(t.t0, *ts);
    t.t1 = std::max(t.t1, *ts + *dur);
  }
  return true;
}

/// The step a measured run shows: the median by duration of its steps
/// after the first (which compiles and warms up), as an index into
/// `t.steps`; -1 where the trace has no steps.
int64_t typicalStep(const Trace &t) {
  std::vector<int64_t> order;
  for (size_t i = t.steps.size() > 1 ? 1 : 0; i < t.steps.size(); ++i)
    order.push_back(static_cast<int64_t>(i));
  if (order.empty())
    return -1;
  auto length = [&](int64_t i) { return t.steps[i].end - t.steps[i].start; };
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return length(a) < length(b) || (length(a) == length(b) && a < b);
  });
  return order[(order.size() - 1) / 2];
}

/// `t` from `start` to `end`, its spans cut there and counted from `start`:
/// one step of a measured run, on the time scale of a predicted one.
Trace within(const Trace &t, double start, double end) {
  Trace w;
  w.names = t.names;
  w.t0 = 0;
  w.t1 = end - start;
  for (const auto &[rank, spans] : t.spans) {
    std::vector<Span> &kept = w.spans[rank];
    for (const Span &s : spans)
      if (s.end > start && s.start < end)
        kept.push_back({std::max(s.start, start) - start,
                        std::min(s.end, end) - start, s.comm});
  }
  return w;
}

/// Each rank's busy, communication and idle shares, and its timeline, on
/// a bar whose full width is `scale` microseconds (the longer of the
/// timelines shown, so that they compare by length).
std::string traceSection(const std::string &title, const Trace &t,
                         double scale) {
  std::string out = "<h2>" + escape(title) + "</h2>";
  if (t.spans.empty())
    return out + "<p>No rank events in the trace.</p>";
  const double wall = std::max(1e-9, t.t1 - t.t0);
  scale = std::max(scale, wall);
  out += "<table><tr><th>rank</th><th>busy</th><th>communication</th>"
         "<th>idle</th></tr>";
  for (const auto &[rank, spans] : t.spans) {
    double busy = 0, comm = 0;
    for (const Span &s : spans)
      (s.comm ? comm : busy) += s.end - s.start;
    double idle = std::max(0.0, wall - busy - comm);
    auto it = t.names.find(rank);
    out += "<tr><td>" +
           escape(it != t.names.end() ? it->second
                                      : "rank " + std::to_string(rank)) +
           "</td><td>" + num(100 * busy / wall, "%.1f") + "%</td><td>" +
           num(100 * comm / wall, "%.1f") + "%</td><td>" +
           num(100 * idle / wall, "%.1f") + "%</td></tr>";
  }
  out += "</table>";
  // The timeline: a row per rank, compute blue, communication orange.
  const double w = 900, rowH = 18, left = 150;
  const double h = 24 + rowH * t.spans.size();
  out +=
      "<svg class=\"timeline\" viewBox=\"0 0 " + num(w) + " " + num(h) + "\">";
  size_t row = 0;
  for (const auto &[rank, spans] : t.spans) {
    double y = 8 + rowH * row++;
    auto it = t.names.find(rank);
    out += "<text x=\"0\" y=\"" + num(y + 12) + "\" class=\"tick\">" +
           escape(it != t.names.end() ? it->second
                                      : "rank " + std::to_string(rank)) +
           "</text>";
    // At most a few thousand rectangles a rank: the shortest merge into
    // their neighbours' pixels anyway.
    const double minWidth = scale / 4000;
    for (const Span &s : spans) {
      if (s.end - s.start < minWidth)
        continue;
      double x = left + (s.start - t.t0) / scale * (w - left - 4);
      double width = std::max(0.5, (s.end - s.start) / scale * (w - left - 4));
      out += "<rect x=\"" + num(x, "%.1f") + "\" y=\"" + num(y) +
             "\" width=\"" + num(width, "%.2f") + "\" height=\"" +
             num(rowH - 4) + "\" fill=\"" + (s.comm ? "#dd6b20" : "#2b6cb0") +
             "\"/>";
    }
  }
  out += "<text x=\"" + num(left) + "\" y=\"" + num(h - 2) +
         "\" class=\"tick\">" + num(wall / 1000, "%.3g") +
         " ms in all, the bar " + num(scale / 1000, "%.3g") +
         " ms; blue: compute, orange: communication</text></svg>";
  return out;
}

} // namespace

std::string reportHtml(const ReportInputs &in, std::string &error) {
  // A plan alone (a notebook showing `program.plan()`): the page without
  // the run's charts.
  const bool planOnly = in.metricsPath.empty();
  if (planOnly && in.planPath.empty()) {
    error = "the report needs a run's metrics or a plan";
    return "";
  }
  std::vector<Row> rows;
  if (!planOnly && !readMetrics(in.metricsPath, rows, error))
    return "";
  std::vector<std::pair<double, double>> loss, val, speed, lr;
  for (const Row &r : rows) {
    loss.push_back({r.step, r.loss});
    lr.push_back({r.step, r.lr});
    if (!std::isnan(r.val))
      val.push_back({r.step, r.val});
    speed.push_back({r.step, r.samples});
  }
  std::string html =
      "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Whale " +
      std::string(planOnly ? "plan" : "run") +
      "</title><style>body{font-family:sans-serif;margin:24px;color:#222}"
      ".chart{width:560px;height:260px;margin:8px}.timeline{width:100%;"
      "max-width:1100px}.title{font-weight:bold;font-size:13px}"
      ".tick{font-size:10px}.axis{stroke:#888}table{border-collapse:"
      "collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:"
      "right}pre{background:#f6f6f6;padding:8px;overflow:auto;max-height:"
      "400px}</style></head><body><h1>Whale " +
      std::string(planOnly ? "plan" : "run") + "</h1>";
  if (!planOnly) {
    html += "<p>" + escape(in.metricsPath) + ": steps " +
            num(rows.front().step, "%.0f") + " to " +
            num(rows.back().step, "%.0f") + ", loss " + num(rows.front().loss) +
            " &rarr; " + num(rows.back().loss) +
            (val.empty() ? std::string()
                         : ", held-out loss " + num(val.back().second)) +
            "</p>";
    std::vector<std::pair<std::string, std::vector<std::pair<double, double>>>>
        lossSeries = {{"training loss", loss}};
    if (!val.empty())
      lossSeries.push_back({"held-out loss", val});
    html += lineChart("loss by step", lossSeries);
    html += lineChart("samples/s by step", {{"samples/s", speed}});
    html += lineChart("learning rate by step", {{"learning rate", lr}});
  }
  // One measured step beside one predicted iteration, on one time scale.
  Trace measured, predicted;
  if (!in.tracePath.empty() && !readTrace(in.tracePath, measured, error))
    return "";
  if (!in.simTracePath.empty() && !readTrace(in.simTracePath, predicted, error))
    return "";
  std::string measuredTitle = "Measured: each rank's time (whale run --trace)";
  std::string stepNote;
  if (int64_t k = typicalStep(measured); k >= 0) {
    const Span step = measured.steps[k];
    const size_t steps = measured.steps.size();
    measured = within(measured, step.start, step.end);
    measuredTitle = "Measured: each rank's time in step " +
                    std::to_string(k + 1) + " of " + std::to_string(steps) +
                    " (whale run --trace)";
    stepNote =
        "step " + std::to_string(k + 1) +
        (k > 0 ? ", the median by length of the steps after the first" : "") +
        ", " + num((step.end - step.start) / 1000, "%.3g") + " ms";
  } else if (!in.tracePath.empty()) {
    stepNote = "the whole trace: it marks no steps";
  }
  const double span = measured.spans.empty() ? 0.0 : measured.t1 - measured.t0;
  const double predictedSpan =
      predicted.spans.empty() ? 0.0 : predicted.t1 - predicted.t0;
  if (!in.tracePath.empty() && !in.simTracePath.empty() && span > 0 &&
      predictedSpan > 0)
    html +=
        "<h2>Measured and predicted step</h2><p>Measured: " + escape(stepNote) +
        ". Predicted: one iteration, " + num(predictedSpan / 1000, "%.3g") +
        " ms (" + num(100 * (predictedSpan - span) / span, "%+.1f") +
        "%). Both timelines below are drawn on one scale.</p>";
  else if (!stepNote.empty())
    html += "<p>Measured: " + escape(stepNote) + ".</p>";
  const double scale = std::max(span, predictedSpan);
  if (!in.tracePath.empty())
    html += "<div class=\"trace\">" +
            traceSection(measuredTitle, measured, scale) + "</div>";
  if (!in.simTracePath.empty())
    html += "<div class=\"trace\">" +
            traceSection("Predicted: each rank's time in one iteration "
                         "(whale sim --trace)",
                         predicted, scale) +
            "</div>";
  if (!in.planPath.empty()) {
    std::string plan;
    error = rt::readRegularFile(in.planPath, "the plan", kMaxReportInput, plan);
    if (!error.empty())
      return "";
    html += "<h2>The plan</h2><pre>" + escape(plan) + "</pre>";
  }
  return html + "</body></html>\n";
}

} // namespace whale
