// `callscope query` from request to output (session.h).
#include "query/session.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <set>

#include "common/files.h"
#include "common/output_format.h"
#include "format/trace_reader.h"
#include "query/driver.h"
#include "query/engine.h"
#include "query/options.h"
#include "query/probes.h"
#include "symbolize/symbolizer.h"

namespace callscope::query {
namespace {

// Where a -n/-P/-m/-f argument's description ends and its clause begins.
size_t description_end(const std::string& text) {
  const size_t e = text.find_first_of(" \t\n/{");
  return e == std::string::npos ? text.size() : e;
}

bool has_clause(const std::string& text) {
  return text.find_first_not_of(" \t\n", description_end(text)) != std::string::npos;
}

// Fires into the engine and writes what it prints as it comes (text), or
// keeps it with the probe that printed it (JSON).
class EngineConsumer final : public Consumer {
 public:
  EngineConsumer(Engine& engine, std::string& out, const Catalog& catalog, std::FILE* file, std::FILE* err,
                 nlohmann::json* records)
      : engine_(engine), out_(out), catalog_(catalog), file_(file), err_(err), records_(records) {}
  void enable(const ProbeInfo& probe, size_t clause) override {
    engine_.enable(probe, clause);
    enabled_.insert(probe.id);
  }
  // The probes at least one clause fires on.
  size_t probes_enabled() const { return enabled_.size(); }
  void fire(const Firing& f) override {
    engine_.fire(f);
    if (!out_.empty()) flush(&f);
  }
  bool exited() const override { return engine_.exited(); }

  // Writes what the engine printed (f: the firing that printed it, if any).
  void flush(const Firing* f) {
    std::string messages = engine_.take_messages();
    if (!messages.empty()) std::fputs(messages.c_str(), err_);
    if (out_.empty()) return;
    if (!records_) {
      std::fwrite(out_.data(), 1, out_.size(), file_);
    } else {
      nlohmann::json r;
      if (f) {
        r["probe"] = catalog_.probe(f->probe->id).full_name();
        r["id"] = f->probe->id;
        r["timestamp"] = f->timestamp;
        r["pid"] = f->pid;
        r["tid"] = f->tid;
      } else {
        r["probe"] = nullptr;  // what the end of the run printed (aggregations)
      }
      r["output"] = out_;
      records_->push_back(std::move(r));
    }
    out_.clear();
  }

 private:
  Engine& engine_;
  std::string& out_;
  const Catalog& catalog_;
  std::FILE* file_;
  std::FILE* err_;
  nlohmann::json* records_;
  std::set<uint32_t> enabled_;
};

Result<std::string> read_script(const std::string& path) {
  auto bytes = read_file_bytes(path);
  if (!bytes) return Error("cannot read script " + path + ": " + bytes.error().message());
  return std::string(bytes->begin(), bytes->end());
}

void write_json(std::FILE* out, const nlohmann::json& j) {
  const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::fwrite(text.data(), 1, text.size(), out);
}

}  // namespace

std::string description_clause(char flag, const std::string& text) {
  const size_t end = description_end(text);
  std::string descr = text.substr(0, end);
  std::string rest = text.substr(end);
  if (flag != 'n') {
    // Each of a comma-separated list completed to four fields from the left.
    const size_t fields = flag == 'P' ? 1 : flag == 'm' ? 2 : 3;
    std::string completed;
    size_t start = 0;
    for (;;) {
      const size_t comma = descr.find(',', start);
      std::string one = descr.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      const auto colons = static_cast<size_t>(std::count(one.begin(), one.end(), ':'));
      if (colons + 1 < fields) one = std::string(fields - 1 - colons, ':') + one;
      one += std::string(4 - fields, ':');
      completed += (completed.empty() ? "" : ",") + one;
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    descr = completed;
  }
  if (rest.find_first_not_of(" \t\n") == std::string::npos) rest = " {}";
  return descr + rest;
}

Result<int> run_query(const QueryRequest& req, std::FILE* out, std::FILE* err) {
  if (!req.script_file.empty() && !req.descriptions.empty())
    return Error("give a script (-s) or probe descriptions (-n, -P, -m, -f), not both");
  if (req.trace.empty() && !req.list)
    return Error("no trace given: query reads a trace written by 'callscope record' (callscope query -s x.d app.trace)");
  if (!req.list && req.script_file.empty() && req.descriptions.empty())
    return Error("nothing to run: give a script (-s FILE) or a probe description and its clause (-n)");

  std::unique_ptr<format::TraceReader> trace;
  if (!req.trace.empty()) {
    CALLSCOPE_TRY(trace, format::TraceReader::open(req.trace));
    if (req.refuse)
      if (const std::string why = req.refuse(*trace); !why.empty()) return Error(why);
  }
  CompileOptions co;
  co.macro_args = req.macro_args;
  if (trace) co.target = Driver::target_pid(*trace);
  co.options = req.options;

  std::vector<std::string> warnings;
  Catalog catalog(trace ? catalog_input(*trace, warnings) : CatalogInput{});
  for (const std::string& w : warnings) std::fprintf(err, "callscope query: warning: %s\n", w.c_str());

  // The script: -s, or the descriptions as clauses.
  std::string source, file;
  if (!req.script_file.empty()) {
    CALLSCOPE_TRY(source, read_script(req.script_file));
    file = req.script_file;
  } else {
    for (const auto& [flag, text] : req.descriptions) source += description_clause(flag, text) + "\n";
    file = "-n";
  }

  if (req.list) {
    std::vector<ProbeSpec> specs;
    bool bodies = !req.script_file.empty();
    for (const auto& d : req.descriptions) bodies = bodies || has_clause(d.second);
    if (bodies) {
      CALLSCOPE_TRY(auto program, compile(source, file, co));
      for (size_t c = 0; c < program->clause_count(); ++c)
        for (const ProbeSpec& s : program->clause_probes(c)) specs.push_back(s);
    } else {
      for (const auto& [flag, text] : req.descriptions) {
        const std::string clause = description_clause(flag, text);
        const std::string descr = clause.substr(0, description_end(clause));
        size_t start = 0;
        for (;;) {
          const size_t comma = descr.find(',', start);
          CALLSCOPE_TRY(ProbeSpec s, parse_probe_description(
                                         descr.substr(start, comma == std::string::npos ? std::string::npos : comma - start), co));
          specs.push_back(std::move(s));
          if (comma == std::string::npos) break;
          start = comma + 1;
        }
      }
    }
    std::set<uint32_t> ids;
    if (specs.empty())
      for (const Probe& p : catalog.probes()) ids.insert(p.id);
    for (const ProbeSpec& s : specs) {
      CALLSCOPE_TRY(std::vector<uint32_t> m, catalog.match(s));
      if (m.empty() && !req.allow_zero && !catalog.may_match_later(s)) return Error(no_match_message(s));
      ids.insert(m.begin(), m.end());
    }
    if (req.json) {
      nlohmann::json probes = nlohmann::json::array();
      for (uint32_t id : ids) {
        const Probe& p = catalog.probe(id);
        probes.push_back({{"id", p.id}, {"provider", p.provider}, {"module", p.module}, {"function", p.function},
                          {"name", p.name}});
      }
      write_json(out, {{"probes", probes}});
    } else {
      std::fputs(list_header().c_str(), out);
      for (uint32_t id : ids) std::fputs(list_line(catalog.probe(id)).c_str(), out);
    }
    return 0;
  }

  auto compiled = compile(source, file, co);
  if (!compiled) {
    // A trace cut short may lack what the script needs ($target: its
    // processes): say what is wrong with it too.
    for (const std::string& p : trace->problems()) std::fprintf(err, "callscope query: damaged trace: %s\n", p.c_str());
    return compiled.error();
  }
  std::shared_ptr<const Program> program = std::move(*compiled);
  symbolize::Symbolizer sym(*trace);
  Strings strings;
  Stacks stacks;
  std::string text;
  Driver driver(*trace, catalog, sym, strings);
  stacks.set_symbol([&driver](uint32_t process, uint64_t addr, uint8_t form) { return driver.symbol(process, addr, form); });
  Engine engine(program, strings, stacks, text);
  nlohmann::json records = nlohmann::json::array();
  EngineConsumer consumer(engine, text, catalog, out, err, req.json ? &records : nullptr);
  std::vector<std::vector<ProbeSpec>> clauses;
  for (size_t c = 0; c < program->clause_count(); ++c) clauses.push_back(program->clause_probes(c));
  if (auto enabled = driver.enable(clauses, req.allow_zero, consumer); !enabled) {
    for (const std::string& p : trace->problems()) std::fprintf(err, "callscope query: damaged trace: %s\n", p.c_str());
    return enabled.error();
  }
  if (!option_set(program->options(), "quiet")) {
    // As dtrace says it, unless quiet: what the probe descriptions matched.
    const size_t n = consumer.probes_enabled();
    const std::string what = req.script_file.empty()
                                 ? (req.descriptions.size() == 1 ? "description '" + req.descriptions[0].second.substr(0, description_end(req.descriptions[0].second)) + "'"
                                                                 : std::string("descriptions"))
                                 : "script '" + req.script_file + "'";
    std::fprintf(err, "callscope query: %s matched %zu probe%s\n", terminal_safe(what).c_str(), n, n == 1 ? "" : "s");
  }
  engine.set_error_probe(driver.probe_info(3));  // dtrace:::ERROR
  const Status ran = driver.run(consumer);
  engine.finish();
  consumer.flush(nullptr);
  std::fflush(out);

  for (const std::string& w : sym.warnings()) std::fprintf(err, "callscope query: warning: %s\n", w.c_str());
  if (req.warnings)
    for (const std::string& w : req.warnings(*trace)) std::fprintf(err, "callscope query: warning: %s\n", w.c_str());
  const int status = engine.exited() ? engine.exit_status() : 0;
  if (req.json) {
    nlohmann::json doc;
    doc["trace"] = req.trace;
    if (co.target) doc["target"] = *co.target;
    doc["records"] = std::move(records);
    doc["exit_status"] = status;
    doc["errors"] = engine.errors();
    doc["events"] = driver.stats().events;
    doc["firings"] = driver.stats().firings;
    write_json(out, doc);
    std::fflush(out);
  }
  if (!ran) return ran.error();
  for (const std::string& p : trace->problems()) std::fprintf(err, "callscope query: damaged trace: %s\n", p.c_str());
  return trace->problems().empty() ? status : 1;
}

}  // namespace callscope::query
