// Unit tests of the parameter table, typed conversions, canonical JSON and job ids.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "gridrun/jobs/params.hpp"

namespace gj = gridrun::jobs;

namespace {

gj::Params defaults() {
  gj::Params p;
  for (const auto& s : gj::param_table()) p.emplace(s.name, s.default_value);
  return p;
}

}  // namespace

TEST(JobsParams, TableDefaultsEqualJobParamsDefaults) {
  // Both come from params.def; this checks the generated converters agree with the table.
  EXPECT_EQ(gj::from_struct(gj::JobParams{}), defaults());
  EXPECT_EQ(gj::from_struct(gj::JobParams{}).size(), gj::param_table().size());
}

TEST(JobsParams, TableNamesUniqueAndTyped) {
  std::set<std::string> names;
  for (const auto& s : gj::param_table()) {
    EXPECT_TRUE(names.insert(s.name).second) << s.name;
    EXPECT_FALSE(s.help.empty()) << s.name;
    switch (s.type) {
      case gj::Type::Bool: EXPECT_TRUE(std::holds_alternative<bool>(s.default_value)); break;
      case gj::Type::Int: EXPECT_TRUE(std::holds_alternative<std::int64_t>(s.default_value)); break;
      case gj::Type::Float: EXPECT_TRUE(std::holds_alternative<double>(s.default_value)); break;
      case gj::Type::String: EXPECT_TRUE(std::holds_alternative<std::string>(s.default_value)); break;
    }
  }
}

TEST(JobsParams, ChoicesAsSpecified) {
  using V = std::vector<std::string>;
  EXPECT_EQ(gj::find_param("model")->choices,
            (V{"mlp", "lenet", "resnet18", "resnet50", "vgg11", "vgg16", "alexnet", "transformer",
               "densenet121", "torchscript", "command"}));
  EXPECT_EQ(gj::find_param("dataset")->choices,
            (V{"synthetic", "cifar10", "mnist", "fashion-mnist", "text", "hdf5"}));
  EXPECT_EQ(gj::find_param("optimizer")->choices, (V{"sgd", "adam", "adamw"}));
  EXPECT_EQ(gj::find_param("precision")->choices, (V{"fp32", "bf16", "fp16"}));
  EXPECT_EQ(gj::find_param("nope"), nullptr);
}

TEST(JobsParams, StructRoundTrip) {
  gj::JobParams jp;
  jp.model = "resnet50";
  jp.lr = 0.025;
  jp.ranks = 4;
  jp.overlap = false;
  jp.time_limit = "1:00:00";
  const gj::JobParams back = gj::to_struct(gj::from_struct(jp));
  EXPECT_EQ(back.model, "resnet50");
  EXPECT_DOUBLE_EQ(back.lr, 0.025);
  EXPECT_EQ(back.ranks, 4);
  EXPECT_FALSE(back.overlap);
  EXPECT_EQ(back.time_limit, "1:00:00");
}

// Issue 59: the task and the precision are enums in JobParams and their names everywhere else
// (grid, job file, attribute, id): each name reads back as its value and writes as its name, a word
// that is none is refused, and the model's kind comes from the model's name alone.
TEST(JobsParams, ClosedSetsAreEnumsWrittenAsTheirNames) {
  gj::Params p = defaults();
  p["task"] = std::string("inference");
  p["precision"] = std::string("bf16");
  const gj::JobParams jp = gj::to_struct(p);
  EXPECT_EQ(jp.task, gj::Task::inference);
  EXPECT_EQ(jp.precision, gj::Precision::bf16);
  EXPECT_EQ(std::get<std::string>(gj::from_struct(jp).at("task")), "inference");
  EXPECT_EQ(std::get<std::string>(gj::get_param(jp, "precision")), "bf16");
  EXPECT_EQ(gj::canonical_json(gj::from_struct(jp)), gj::canonical_json(p));
  for (gridrun::base::Precision x : gridrun::base::kPrecisions)
    EXPECT_EQ(gridrun::base::parse_precision(gridrun::base::precision_name(x)), x);
  for (gridrun::base::Task x : gridrun::base::kTasks)
    EXPECT_EQ(gridrun::base::parse_task(gridrun::base::task_name(x)), x);
  EXPECT_FALSE(gridrun::base::parse_precision("fp8"));
  EXPECT_FALSE(gridrun::base::parse_task("Train"));
  gj::JobParams q;
  EXPECT_FALSE(gj::set_param(q, "task", std::string("infer")));
  EXPECT_TRUE(gj::set_param(q, "task", std::string("inference")));
  EXPECT_EQ(q.task, gj::Task::inference);
  EXPECT_EQ(gj::model_kind("torchscript"), gj::ModelKind::file);
  EXPECT_EQ(gj::model_kind("command"), gj::ModelKind::command);
  for (const char* m : {"mlp", "resnet50", "transformer"})
    EXPECT_EQ(gj::model_kind(m), gj::ModelKind::builtin) << m;
}

TEST(JobsParams, ToStructRejectsMissingAndMistyped) {
  gj::Params p = defaults();
  p.erase("lr");
  EXPECT_THROW(gj::to_struct(p), std::invalid_argument);
  p = defaults();
  p["ranks"] = std::string("two");
  EXPECT_THROW(gj::to_struct(p), std::invalid_argument);
}

TEST(JobsParams, CanonicalJsonSortedAndNormalized) {
  gj::Params p;
  p["lr"] = 0.1;
  p["epochs"] = std::int64_t{3};
  p["model"] = std::string("a\"b\n");
  p["overlap"] = true;
  p["momentum"] = 1.0;
  p["weight_decay"] = -0.0;
  EXPECT_EQ(gj::canonical_json(p),
            "{\"epochs\":3,\"lr\":0.1,\"model\":\"a\\\"b\\n\",\"momentum\":1.0,\"overlap\":true,"
            "\"weight_decay\":0.0}");
  p.clear();
  p["lr"] = 1e-5;
  EXPECT_EQ(gj::canonical_json(p), "{\"lr\":1e-05}");
}

TEST(JobsParams, JobIdIs12HexAndDependsOnValuesOnly) {
  gj::Params a = defaults();
  const std::string id = gj::job_id(a);
  ASSERT_EQ(id.size(), 12u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
  gj::Params b = defaults();
  b["lr"] = 0.10;  // same double as 0.1
  EXPECT_EQ(gj::job_id(b), id);
  b["lr"] = 0.2;
  EXPECT_NE(gj::job_id(b), id);
}

TEST(JobsParams, JobIdIsPinned) {
  // Ids name result files across versions: the canonical form and the hash must never drift.
  // (MurmurHash64A of this text is 11d17eac7112c77a; tests/jobs/check_ids.py recomputes it.)
  // Re-pinned when the inference parameters (checkpoint, infer_batches, quantize) joined the table.
  // id_json: the text the id hashes (canonical_json less the later parameters at their defaults).
  EXPECT_EQ(gj::id_json(defaults()).substr(0, 79),
            "{\"batch_per_rank\":32,\"bucket_mb\":25.0,\"checkpoint\":\"\",\"checkpoint_minutes\":0.0,");
  EXPECT_EQ(gj::job_id(defaults()), "11d17eac7112");
}

TEST(JobsParams, LaterParametersLeaveOldIdsAlone) {
  // cudnn_benchmark, tf32, cuda_graph and memory_format joined after ids were published: at their
  // defaults they are not hashed (the pinned id above stays), set to anything else they are.
  gj::Params p = defaults();
  EXPECT_NE(gj::canonical_json(p).find("\"cuda_graph\":false"), std::string::npos);
  EXPECT_EQ(gj::id_json(p).find("cuda_graph"), std::string::npos);
  for (const char* k : {"cudnn_benchmark", "tf32", "cuda_graph"}) {
    gj::Params q = p;
    q[k] = !std::get<bool>(q[k]);
    EXPECT_NE(gj::job_id(q), gj::job_id(p)) << k;
    EXPECT_NE(gj::id_json(q).find(k), std::string::npos) << k;
  }
  gj::Params q = p;
  q["memory_format"] = std::string("channels_last");
  EXPECT_NE(gj::job_id(q), gj::job_id(p));
  // augment and mlp_hidden joined with issue 16, the same way.
  for (const auto& [k, v] :
       {std::pair<const char*, const char*>{"augment", "flip"}, {"mlp_hidden", "512,256"}}) {
    EXPECT_TRUE(gj::find_param(k)->id_omits_default) << k;
    EXPECT_EQ(gj::id_json(p).find(k), std::string::npos) << k;
    gj::Params r = p;
    r[k] = std::string(v);
    EXPECT_NE(gj::job_id(r), gj::job_id(p)) << k;
  }
}

TEST(JobsParams, NewParametersAsSpecified) {
  const gj::ParamSpec* augment = gj::find_param("augment");
  ASSERT_NE(augment, nullptr);
  EXPECT_EQ(augment->type, gj::Type::String);
  EXPECT_EQ(augment->default_value, gj::Value{std::string("none")});
  EXPECT_EQ(augment->choices, (std::vector<std::string>{"none", "flip", "crop_flip"}));
  const gj::ParamSpec* hidden = gj::find_param("mlp_hidden");
  ASSERT_NE(hidden, nullptr);
  EXPECT_EQ(hidden->default_value, gj::Value{std::string("256,128")});  // the mlp's layers so far
  EXPECT_TRUE(hidden->choices.empty());
  EXPECT_EQ(gj::JobParams{}.augment, "none");
  EXPECT_EQ(gj::JobParams{}.mlp_hidden, "256,128");
}

// A value of the parameter's type that differs from its default and passes its own checks.
static gj::Value other_value(const gj::ParamSpec& s) {
  if (!s.choices.empty())
    return s.choices.back() == std::get<std::string>(s.default_value) ? s.choices.front() : s.choices.back();
  switch (s.type) {
    case gj::Type::Bool: return !std::get<bool>(s.default_value);
    case gj::Type::Int: return std::get<std::int64_t>(s.default_value) + 1;
    case gj::Type::Float:
      return s.max ? (*s.max + std::get<double>(s.default_value)) / 2
                   : std::get<double>(s.default_value) + 0.5;
    case gj::Type::String: break;
  }
  if (s.name == "time_limit") return std::string("1:30:00");
  if (s.name == "mlp_hidden") return std::string("64");
  return std::string("x/y z");
}

TEST(JobsParams, EveryParameterRoundTripsThroughTheStruct) {
  // Each parameter alone set to a non-default value: to_struct/from_struct keep it, and only it.
  for (const auto& s : gj::param_table()) {
    gj::Params p = defaults();
    const gj::Value v = other_value(s);
    ASSERT_NE(v, s.default_value) << s.name;
    EXPECT_EQ(gj::check_values(gj::Params{{s.name, v}}).size(), 0u) << s.name;
    p[s.name] = v;
    const gj::JobParams jp = gj::to_struct(p);
    EXPECT_EQ(gj::from_struct(jp), p) << s.name;
    EXPECT_NE(gj::from_struct(gj::JobParams{}).at(s.name), v) << s.name;
  }
  // All of them at once.
  gj::Params all;
  for (const auto& s : gj::param_table()) all[s.name] = other_value(s);
  EXPECT_EQ(gj::from_struct(gj::to_struct(all)), all);
}

TEST(JobsParams, ParamsFromJsonRoundTripAndSpellings) {
  gj::Params p = defaults();
  p["lr"] = 0.3;
  p["model"] = std::string("vgg16");
  EXPECT_EQ(gj::params_from_json(gj::canonical_json(p)), p);
  // Reordered keys and other number spellings parse to the same values, hence the same id.
  gj::Params q = gj::params_from_json("{\"model\": \"vgg16\", \"lr\": 3e-1}");
  EXPECT_EQ(gj::job_id(q), gj::job_id(p));
}

TEST(JobsParams, ParamsFromJsonErrorsNameTheKey) {
  try {
    gj::params_from_json("{\"lrr\": 0.1}");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "params.lrr: unknown parameter; did you mean 'lr'?");
  }
  try {
    gj::params_from_json("{\"ranks\": \"x\"}");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "params.ranks: expected an integer, got 'x'");
  }
  EXPECT_THROW(gj::params_from_json("{\"lr\": "), std::runtime_error);
}

TEST(JobsParams, ParseValueTypesAndRanges) {
  EXPECT_EQ(gj::parse_value(*gj::find_param("ranks"), "4"), gj::Value{std::int64_t{4}});
  EXPECT_EQ(gj::parse_value(*gj::find_param("train_samples"), "1e3"), gj::Value{std::int64_t{1000}});
  EXPECT_EQ(gj::parse_value(*gj::find_param("lr"), "0.10"), gj::Value{0.1});
  EXPECT_EQ(gj::parse_value(*gj::find_param("overlap"), "no"), gj::Value{false});
  EXPECT_EQ(gj::parse_value(*gj::find_param("model"), "lenet"), gj::Value{std::string("lenet")});
  auto msg = [](const char* key, const char* text) {
    try {
      gj::parse_value(*gj::find_param(key), text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(msg("ranks", "2.5"), "ranks: expected an integer, got '2.5'");
  EXPECT_EQ(msg("lr", "fast"), "lr: expected a number, got 'fast'");
  EXPECT_EQ(msg("lr", "0"), "lr: 0.0 is out of range (must be > 0)");
  EXPECT_EQ(msg("ranks", "0"), "ranks: 0 is out of range (must be >= 1)");
  EXPECT_EQ(msg("momentum", "1.5"), "momentum: 1.5 is out of range (0-1)");
  EXPECT_EQ(msg("overlap", "maybe"), "overlap: expected a bool, got 'maybe'");
  EXPECT_EQ(msg("optimizer", "adamm"), "optimizer: unknown optimizer 'adamm'; did you mean 'adam'?");
  EXPECT_EQ(msg("dataset", "imagenet"),
            "dataset: unknown dataset 'imagenet'; choose one of synthetic, cifar10, mnist, "
            "fashion-mnist, text, hdf5");
}

TEST(JobsParams, TimeLimitSeconds) {
  EXPECT_EQ(gj::time_limit_seconds(""), 0);
  EXPECT_EQ(gj::time_limit_seconds("30"), 1800);
  EXPECT_EQ(gj::time_limit_seconds("5:30"), 330);
  EXPECT_EQ(gj::time_limit_seconds("1:00:00"), 3600);
  EXPECT_EQ(gj::time_limit_seconds("2-0"), 2 * 86400);
  EXPECT_EQ(gj::time_limit_seconds("1-2:30"), 86400 + 2 * 3600 + 30 * 60);
  EXPECT_EQ(gj::time_limit_seconds("1-00:00:10"), 86410);
  for (const char* bad : {"1:2:3:4", "abc", "1-", ":30", "-1", "0", "1h"})
    EXPECT_THROW(gj::time_limit_seconds(bad), std::invalid_argument) << bad;
}

TEST(JobsParams, SuggestParam) {
  EXPECT_EQ(gj::suggest_param("lrr"), "lr");
  EXPECT_EQ(gj::suggest_param("epoch"), "epochs");
  EXPECT_EQ(gj::suggest_param("batch"), "batch_per_rank");
  EXPECT_EQ(gj::suggest_param("zzzzzzzz"), "");
}

TEST(JobsParams, ToString) {
  EXPECT_EQ(gj::to_string(gj::Value{0.1}), "0.1");
  EXPECT_EQ(gj::to_string(gj::Value{2.0}), "2.0");
  EXPECT_EQ(gj::to_string(gj::Value{std::int64_t{7}}), "7");
  EXPECT_EQ(gj::to_string(gj::Value{true}), "true");
  EXPECT_EQ(gj::to_string(gj::Value{std::string("x")}), "x");
}
