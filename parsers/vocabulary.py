"""What a number on a progress line means, from the name printed before it or the unit printed after it: one table
of names and one of units, as data (after HTA's raw-name -> typed-field vocabulary). parsers/templates.py asks it
for every numeric slot of a learned template; statistics and timestamps decide where neither says.

A name is compared normalised: lower case, every run of separators (space, `_`, `-`, `.`, `/`, `(`, `)`, `:`) made
one `_`, a unit word at its end taken off (`elapsed time per iteration (ms)` -> `elapsed_time_per_iteration` in ms,
`train_step_timing in s` -> `train_step_timing` in s). A name matches a role when the whole normalised name, or a
tail of it that starts at a `_`, is one of the role's names: `actor/grad_norm` and `perf/max_memory_allocated_gb`
find `grad_norm` and `max_memory_allocated`.

Roles (Role below): the columns of the steps frame they fill are in ROLE_COLUMNS.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

Role = Literal["counter", "epoch", "step_time", "avg_step_time", "cum_time", "eta", "data_time", "iter_rate",
               "sec_per_iter", "samples_per_sec", "tokens_per_sec", "loss", "lr", "grad_norm", "mem", "mfu", "tflops",
               "generate_time", "train_phase_time", "phase_time", "epoch_time", "interval_time", "stamp", "count"]

# role -> the names it is printed under, normalised (see above). Sources: the layouts of ../shared/reference/formats
# (each library's printing code) and the trainers of the shared corpus.
NAMES: dict[Role, tuple[str, ...]] = {
    "counter": ("step", "steps", "global_step", "globalstep", "iter", "iters", "iteration", "iter_num", "it", "batch",
                "batch_idx", "training_step", "train_step", "update", "updates", "step_num", "num_steps", "global_steps",
                "local_step", "optimizer_step", "global_step_max_steps", "iterations", "步", "迭代", "迭代次数", "步数", "步骤",
                # a count of what is done so far (Dopamine's `Steps executed: 1000`)
                "steps_executed", "steps_done", "steps_completed", "steps_taken", "iterations_done",
                "iterations_completed", "batches_done", "batches_processed", "updates_done", "updates_applied",
                "nupdates",  # OpenAI Baselines' `misc/nupdates`
                "batches_seen",  # DeepPavlov's `"batches_seen": 10`
                "t_env"),  # PyMARL's environment timestep `t_env: 10050 / 2050000`, the loop's counter
    "epoch": ("epoch", "ep", "training_epoch", "train_epoch", "轮", "轮次", "轮数"),
    "step_time": ("time", "dt", "step_time", "iter_time", "batch_time", "time_per_step", "time_step", "time_per_iter",
                  "time_per_iteration", "elapsed_time_per_iteration", "iteration_time", "step_timing",
                  "train_step_timing", "train_step_time", "timing_s_step", "timing_step", "step_latency", "latency",
                  "e2e_latency", "last_time", "batch_time_avg", "sec_per_step", "seconds_per_step", "time_iter",
                  "train_time_per_step", "step_duration", "time_delta", "delta",
                  "delta_time", "iteration_time_s", "time_cost", "cost_time", "batch_cost", "seconds", "took",
                  "takes", "took_time", "duration", "dur", "spent", "batch_t", "耗时", "用时", "时间", "每步耗时", "单步耗时",
                  "time_this_iter", "time_this_iter_s",  # Ray Train / Tune results
                  "t_iter", "t_step", "t_batch", "iter_t", "step_t",
                  "updt",  # LeRobot's `updt_s:0.816 data_s:0.016`: the update, its data wait apart
                  "bch",  # flashlight's `bch(ms): 850.00 | smp(ms): 16.32`: the batch, its sample loading apart
                  "train"),  # `data_s=0.49 train_s=0.816`: timed, the step's training (`train_time` is the run's)
    "avg_step_time": ("step_avg", "avg_step_time", "step_time_avg", "avg_iter_time", "iter_time_avg", "time_avg",
                      "avg_time", "mean_step_time", "avg_time_per_step", "average_step_time"),
    "cum_time": ("elapsed", "elapsed_time", "train_time", "training_time", "total_time", "time_elapsed", "wall_time",
                 "walltime", "wall", "wallclock", "runtime", "train_runtime", "time_since_start", "total_elapsed",
                 "time_total", "time_total_s", "time_since_restore", "time_since_restore_s",
                 "running_time",  # Ray Train's `Total running time: 1min 8s`
                 "run_time",  # `runTime`, camelCase
                 "总耗时", "总用时", "已用时间", "已用时",  # Chinese: total, elapsed
                 "elap"),  # ELECTRA's ETAHook `SPS: 1.2, ELAP: 4:15, ETA: ...`
    # An epoch's time (MindSpore's TimeMonitor `epoch time: 8500.0 ms, per step time: 850.0 ms`, DGL's `Epoch
    # Time(s)`): many steps' worth, never a step's.
    "epoch_time": ("epoch_time", "time_per_epoch", "epoch_duration", "epoch_time_s", "time_epoch"),
    # A time over the steps between two prints, so named (GluonCV's estimator `time/interval: 8.500s` every 50
    # batches): divided by the counter's step between prints (parsers/templates._step_time).
    "interval_time": ("time_interval", "interval_time", "time_per_interval", "interval_duration"),
    "eta": ("eta", "remaining", "remaining_time", "time_left", "time_remaining", "eta_s", "left", "剩余时间", "剩余"),
    "data_time": ("data", "data_time", "data_wait", "dataloader_time", "data_loader_time", "load_time",
                  "load_data_time", "data_load_time", "dt_data", "data_loading", "data_loading_time", "batch_load_time",
                  "get_batch", "time_data", "input_time", "data_wait_time", "last_data_time", "timing_s_data",
                  "batch_generator", "data_cost", "reader_cost", "data_t",
                  # waits named for what they wait on: I/O, a fetch, the loader
                  "io", "io_time", "io_wait", "fetch", "fetch_time", "data_fetch", "data_fetch_time", "dataloader",
                  "dataloader_wait", "loader", "loader_time", "loader_wait", "input_wait", "batch_wait", "wait_data",
                  "load", "input", "data_load",  # FunASR's speed stats `'data_load': '0.016'`
                  "sample_batch",  # an RL loop's draw from its replay buffer (d3rlpy's `time_sample_batch`)
                  "数据", "数据加载", "加载",  # Chinese: data, data loading, loading
                  "smp",  # flashlight's sample timer: the dataset's `get` of the batch
                  "etl", "etl_time",  # DL4J's PerformanceListener `ETL: 17 ms; iteration 10; iteration time: 850 ms`
                  "next_batch",  # the loop's `next(iterator)`: the wait for the next batch
                  "prep", "preproc", "preprocess", "preprocessing",  # the batch prepared on the loop's own thread
                  "queue_wait", "queue_time",  # a prefetch queue's wait
                  "input_pipeline", "read", "read_time", "reading",
                  "collate", "collate_time", "collate_fn",  # the batch assembled from its samples
                  "dataload", "dataloading", "loader_next", "dataloader_next", "next_data",
                  "feed", "ingest",  # the input fed to the step (TensorFlow's feeds), a pipeline's ingest
                  "prefetch", "sampler"),  # the batch prefetched, the sampler's draw of it
    "iter_rate": ("it_s", "its", "iter_s", "iters_s", "steps_s", "step_s", "it_per_s", "iter_per_s", "it_sec",
                  "iter_sec", "iterations_per_sec", "iterations_per_second", "steps_per_sec", "steps_per_second",
                  "train_speed_iter_s", "average_steps_s", "train_steps_per_second", "ups", "batches_per_sec",
                  "batches_per_second", "batches_s"),
    "sec_per_iter": ("s_it", "sec_it", "s_iter", "sec_per_iter", "s_step", "train_speed_s_it", "s_per_it"),
    "samples_per_sec": ("samples_s", "samples_sec", "sample_s", "samples_per_sec", "samples_per_second", "img_s",
                        "imgs_s", "images_s", "img_sec", "images_sec", "images_per_sec", "images_per_second",
                        "seqs_s", "seq_s", "sequences_per_second", "examples_s", "examples_per_sec", "fps",
                        "samples_per_sec_per_gpu", "train_samples_per_second", "throughput_samples",
                        "fps_total"),  # rl_games' `fps step: .. fps total: ..` (frames per second end to end)
    "tokens_per_sec": ("tps", "tok_s", "tokens_s", "tokens_sec", "tok_sec", "tokens_per_sec", "tokens_per_second",
                       "throughput_tokens", "tgs", "wps", "words_s", "tokens_per_sec_per_gpu", "tok_per_sec",
                       "token_throughput", "average_tokens_s", "tokens_s_device"),
    "loss": ("loss", "train_loss", "lm_loss", "total_loss", "reduced_train_loss", "loss_train", "avg_loss",
             "policy_loss", "pg_loss", "training_loss", "mean_loss", "loss_value", "损失", "训练损失",
             # gradient boosting's default metrics, printed per round (XGBoost's `[10]\ttrain-rmse:0.51`)
             "rmse", "logloss", "mlogloss"),
    "lr": ("lr", "learning_rate", "lrate", "actor_lr", "lr_0", "learningrate", "学习率"),
    "grad_norm": ("grad_norm", "gnorm", "grad_norm_total", "gradient_norm", "actor_grad_norm", "grad_l2_norm"),
    "mem": ("mem", "memory", "max_mem", "peak_mem", "max_memory_allocated", "max_allocated", "memory_gib",
            "max_memory", "peak_memory", "gpu_mem", "memory_allocated", "max_memory_reserved", "mem_gb",
            "memory_gb", "cuda_mem", "allocated"),
    "mfu": ("mfu", "mfu_pct", "mfu_actor", "model_flops_utilization", "perf_mfu"),
    "tflops": ("tflops", "tflop_s", "tflops_s", "tflops_per_gpu", "tflop_s_gpu", "achieved_tflops", "tflops_s_gpu",
               "throughput_per_gpu_tflop_s_gpu", "average_tflops", "tflops_gpu", "tflops_per_second",
               "tflop_s_device"),
    "generate_time": ("timing_s_gen", "timing_gen", "gen_time", "generate_time", "generation_time", "rollout_time",
                      "generation",  # NeMo-RL's `Timing:` record
                      "timing_s_generate_sequences", "timing_s_rollout", "make_experience", "timing_make_experience"),
    # The training phase of an RL step (verl's actor update; DeepSpeed-Chat's own line kind reads its `Training time`)
    "train_phase_time": ("timing_s_update_actor", "timing_update_actor", "update_actor", "timing_s_update_policy",
                         "timing_s_train", "timing_train", "actor_update_time", "policy_update_time",
                         "policy_training"),
    # A wall-clock instant as a number (zap's and structlog's JSON `"ts":1767607208.160`, `timestamp`): epoch seconds
    # or a finer unit of them (parsers/templates.STAMP_SCALES).
    "stamp": ("ts", "timestamp", "time_stamp", "unix_time", "unixtime", "unix_timestamp", "created", "created_at",
              "logged_at", "epoch_seconds"),
    # Counts that grow with the run but are not the step (a monotone integer a counter must not be taken from).
    "count": ("consumed_samples", "consumed_tokens", "samples_seen", "tokens_seen", "consumed", "global_batch_size",
              "batch_size", "frames", "num_tokens", "tokens", "samples", "seen", "total", "num_samples", "rank",
              "world_size", "v_num", "gpu", "gpus", "node", "nodes", "acc", "accuracy", "v",
              "timesteps", "total_timesteps", "serial_timesteps"),  # environment steps of an RL run, not updates
}

# A unit printed right after the number (or after one space): (role where the unit alone says it, seconds per unit
# for a duration). `ms/step` and `s/it` say both what and how much; `ms`, `s`, `min` only how much.
UNITS: dict[str, tuple[Role | None, float | None]] = {
    "ms/step": ("step_time", 1e-3), "s/step": ("step_time", 1.0), "ms/it": ("step_time", 1e-3),
    "s/it": ("sec_per_iter", 1.0), "s/iter": ("sec_per_iter", 1.0), "sec/it": ("sec_per_iter", 1.0),
    "s / it": ("sec_per_iter", 1.0), "s/iteration": ("sec_per_iter", 1.0), "ms/iter": ("step_time", 1e-3),
    "it/s": ("iter_rate", None), "steps/s": ("iter_rate", None), "iter/s": ("iter_rate", None),
    "its/s": ("iter_rate", None), "step/s": ("iter_rate", None),
    "samples/s": ("samples_per_sec", None), "samples/sec": ("samples_per_sec", None),
    "sample/s": ("samples_per_sec", None), "img/s": ("samples_per_sec", None), "img/sec": ("samples_per_sec", None),
    "images/s": ("samples_per_sec", None), "images/sec": ("samples_per_sec", None),
    "imgs/s": ("samples_per_sec", None), "ex/s": ("samples_per_sec", None), "seq/s": ("samples_per_sec", None),
    "examples/s": ("samples_per_sec", None), "examples/sec": ("samples_per_sec", None),
    "tok/s": ("tokens_per_sec", None), "tokens/s": ("tokens_per_sec", None), "tok/sec": ("tokens_per_sec", None),
    "tokens/sec": ("tokens_per_sec", None),
    "ms": (None, 1e-3), "msec": (None, 1e-3), "msecs": (None, 1e-3), "s": (None, 1.0), "sec": (None, 1.0),
    "secs": (None, 1.0),
    "seconds": (None, 1.0), "min": (None, 60.0), "mins": (None, 60.0), "minutes": (None, 60.0), "h": (None, 3600.0),
    "us": (None, 1e-6), "µs": (None, 1e-6),
    # spelled out (`the step took 850 milliseconds`)
    "millisecond": (None, 1e-3), "milliseconds": (None, 1e-3), "second": (None, 1.0), "microseconds": (None, 1e-6),
    "hours": (None, 3600.0), "hour": (None, 3600.0), "hrs": (None, 3600.0), "hr": (None, 3600.0),
    # Chinese: seconds, milliseconds, minutes (`耗时: 0.85 秒`)
    "秒": (None, 1.0), "毫秒": (None, 1e-3), "分钟": (None, 60.0),
    # Japanese, Korean, Russian: seconds and milliseconds (`0.85秒`, `0.85초`, `0.85 с`, `850 мс`)
    "ミリ秒": (None, 1e-3), "초": (None, 1.0), "밀리초": (None, 1e-3), "с": (None, 1.0), "сек": (None, 1.0),
    "мс": (None, 1e-3),
    # Turkish (`sn`, `saniye`), Vietnamese (`giây`), Italian, Portuguese, Polish seconds
    "sn": (None, 1.0), "saniye": (None, 1.0), "giây": (None, 1.0), "secondi": (None, 1.0), "segundos": (None, 1.0),
    "sekund": (None, 1.0), "sekundy": (None, 1.0),
}
# The other spellings of a rate or a time per count (`steps/sec`, `it/sec`, `batches/s`, `s/batch`, `ms/iteration`,
# `seqs/s`): each word reduced to one form, and the pair looked up in CANONICAL_UNITS. Rates are per second only.
_TIME_WORDS = {"s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s", "ms": "ms", "msec": "ms",
               "msecs": "ms",
               "min": "min", "mins": "min", "minute": "min", "minutes": "min"}
_COUNT_WORDS = {**dict.fromkeys(("it", "its", "iter", "iters", "iteration", "iterations", "step", "steps", "batch",
                                 "batches", "update", "updates"), "it"),
                **dict.fromkeys(("sample", "samples", "ex", "example", "examples", "img", "imgs", "image", "images",
                                 "seq", "seqs", "sequence", "sequences"), "sample"),
                **dict.fromkeys(("tok", "toks", "token", "tokens"), "tok")}
CANONICAL_UNITS: dict[str, tuple[Role, float | None]] = {
    "it/s": ("iter_rate", None), "sample/s": ("samples_per_sec", None), "tok/s": ("tokens_per_sec", None),
    "s/it": ("step_time", 1.0), "ms/it": ("step_time", 1e-3), "min/it": ("step_time", 60.0)}


def _canonical_unit(key: str) -> tuple[Role, float | None] | None:
    words = key.replace(" ", "").split("/")
    if len(words) != 2:
        return None
    a, b = words
    if a in _COUNT_WORDS and b in _TIME_WORDS:
        return CANONICAL_UNITS.get(f"{_COUNT_WORDS[a]}/{_TIME_WORDS[b]}")
    if a in _TIME_WORDS and b in _COUNT_WORDS:
        return CANONICAL_UNITS.get(f"{_TIME_WORDS[a]}/{_COUNT_WORDS[b]}")
    return None


# Memory units -> GB (of 2**30 bytes, as DeepSpeed and PyTorch print them).
MEM_UNITS: dict[str, float] = {"gb": 1.0, "gib": 1.0, "g": 1.0, "mb": 1 / 1024, "mib": 1 / 1024, "m": 1 / 1024,
                               "kb": 1 / 2**20, "kib": 1 / 2**20}
# A magnitude letter glued to a number (`617K`, `5.24M`, `1.2k`): nanotron's human_format (K, M, G, T, P) and tqdm's
# unit_scale (k, M, G). Never a lower-case `m` (minutes) or `B` (bytes or billions: a model's size, not a count).
MAGNITUDES: dict[str, float] = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
# A unit word at the end of a name: `(ms)`, `_ms`, ` in s`, `_s` (seconds per unit).
NAME_UNITS: dict[str, float] = {"ms": 1e-3, "msec": 1e-3, "s": 1.0, "sec": 1.0, "secs": 1.0, "seconds": 1.0,
                                "in_s": 1.0, "in_ms": 1e-3, "min": 60.0, "us": 1e-6}
DURATION_ROLES: frozenset[Role] = frozenset({"step_time", "avg_step_time", "cum_time", "eta", "data_time",
                                             "generate_time", "train_phase_time"})

# The steps-frame column each role fills (roles not here are read, listed, and not stored as steps).
ROLE_COLUMNS: dict[Role, str] = {
    "epoch": "epoch", "data_time": "data_time_s", "samples_per_sec": "samples_per_sec",
    "tokens_per_sec": "tokens_per_sec", "loss": "loss", "lr": "lr", "grad_norm": "grad_norm",
    "mem": "max_mem_alloc_gb", "tflops": "tflops", "generate_time": "generate_time_s",
    "train_phase_time": "train_time_s",
}

# A template whose text before its first number names one of these is an evaluation or test pass, not training.
EVAL_WORDS = re.compile(r"\b(?:test|val|valid|validation|validate|eval|evaluation|evaluating|inference|predict|"
                        r"testing|sanity)\b", re.I)

# camelCase words (DL4J's `iterationTimeMs`, `etlTimeMs`; JavaScript's `stepTime`) are words as `_` makes them
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z][a-z])")
_SEP = re.compile(r"[\s_\-./():\\\[\]{}'\"@#,;=|*<>+]+")


_BRACKETED_UNIT = re.compile(r"\s*[(\[](ms|msec|s|sec|secs|seconds|min|us)[)\]]\s*$", re.IGNORECASE)


def is_unit_word(word: str) -> bool:
    """A unit of time or memory written as a word (`s`, `ms`, `sec`, `MB`): what a bracket after a name may hold."""
    w = word.strip().lower()
    return w in NAME_UNITS or w in MEM_UNITS


def normalise(name: str) -> tuple[str, float | None]:
    """A printed name -> (normalised name, seconds per unit where a unit word ends it)."""
    # A unit of time over a step's word is seconds per step whatever the word (HiFi-GAN's `s/b`, Transformer-XL's
    # `ms/batch`); the other way round, steps per second (`batch/s`). The slash decides: `batch_s` may be a time.
    if (per := _PER_STEP_NAME.fullmatch(name.strip())) is not None:
        scale = NAME_UNITS[per.group(1).lower()]
        return "s_it", None if scale == 1.0 else scale  # seconds, the default, as _name_unit gives them
    if _STEP_RATE_NAME.fullmatch(name.strip()) is not None:
        return "it_s", None
    # A step's word with a unit glued by `_` (`step_s=0.816`, LeRobot's `updt_s`, `batch_ms`) is its seconds: a rate is
    # written with its slash (`step/s`) or spelled out (`steps_per_sec`).
    if (timed := _STEP_SECONDS_NAME.fullmatch(name.strip())) is not None:
        return "step_time", NAME_UNITS[timed.group(1).lower()]
    # A unit in brackets at the end is a unit whatever the words before it (`Time/iter (s)` is no `iter_s` rate)
    if (bracketed := _BRACKETED_UNIT.search(name)) is not None and bracketed.start() > 0:
        return _SEP.sub("_", name[:bracketed.start()].lower()).strip("_"), NAME_UNITS[bracketed.group(1).lower()]
    # A part of a step's time per step, named by that part (`data/iter` beside `time/iter`): the part before the slash
    # says the role (the step's own time per step keeps its name: `time_iter` is one step's a line)
    if (per_step := _PER_STEP_OF.fullmatch(name.strip())) is not None:
        head = _SEP.sub("_", per_step.group(1).lower()).strip("_")
        if role_of(head) in _PARTS_OF_A_STEP:
            return head, _name_unit(head)
    norm = _SEP.sub("_", _CAMEL.sub("_", name).lower()).strip("_")
    if role_of(norm) is not None:  # `average_steps_s`, `timing_s_step`: the whole name says it, unit word and all
        return norm, _name_unit(norm)
    for unit in sorted(NAME_UNITS, key=len, reverse=True):
        if norm.endswith("_" + unit) and len(norm) > len(unit) + 1:
            stem = norm[: -len(unit) - 1]
            # `timing_s_step`, `train_step_timing_in_s`: a unit word kept where the name without it is no role
            if role_of(stem) is not None or role_of(norm) is None:
                return stem, NAME_UNITS[unit]
    return norm, None


_STEP_WORDS = r"(?:it|its|iter|iters|iteration|iterations|step|steps|batch|batches|b|update|updates)"
_PER_STEP_NAME = re.compile(r"(s|sec|secs|ms|msec)\s*/\s*" + _STEP_WORDS, re.I)
_STEP_RATE_NAME = re.compile(_STEP_WORDS + r"\s*/\s*(?:s|sec|second)", re.I)
_STEP_SECONDS_NAME = re.compile(r"(?:iter|iteration|step|batch|update)_(s|sec|secs|ms|msec)", re.I)
_PARTS_OF_A_STEP = frozenset({"data_time", "generate_time", "train_phase_time"})
_PER_STEP_OF = re.compile(r"([^/]+?)\s*/\s*" + _STEP_WORDS, re.I)


def _name_unit(norm: str) -> float | None:
    """Seconds per unit named inside a name that has a role as it stands (`iter_time_ms_avg` -> ms); seconds, the
    default, need no word."""
    return next((NAME_UNITS[p] for p in norm.split("_") if p in ("ms", "msec", "us", "min")), None)


def memory_name(norm: str) -> tuple[str, float] | None:
    """`max_memory_allocated_gb`, `memory_mib` -> (the name without its unit, GB per unit); None without one."""
    for unit, per in MEM_UNITS.items():
        if len(unit) > 1 and norm.endswith("_" + unit):
            return norm[: -len(unit) - 1], per
    return None


# The same roles in the words of other languages' loops (normalised: lower case), beside the Chinese ones above:
# Japanese, Traditional Chinese, Korean, Russian, German, French, Spanish (not French's `temps`: GPU temperatures),
# Italian and Portuguese, Turkish, Polish, Vietnamese (its words spaced: normalised with `_`).
OTHER_LANGUAGES: dict[Role, tuple[str, ...]] = {
    "counter": ("ステップ", "イテレーション", "步數", "스텝", "단계", "반복", "шаг", "итерация", "schritt", "étape", "itération",
                "paso", "iteración", "passo", "iterazione", "iteração", "adım", "iterasyon", "krok", "iteracja",
                "bước", "lần_lặp"),
    "epoch": ("エポック", "에폭", "에포크", "эпоха", "epoche", "époque", "época", "epoca", "epok", "epoka", "kỷ_nguyên"),
    "loss": ("損失", "ロス", "訓練損失", "손실", "потеря", "потери", "лосс", "verlust", "perte", "pérdida", "perdita", "perda",
             "kayıp", "strata", "mất_mát"),
    "step_time": ("時間", "所要時間", "耗時", "用時", "시간", "소요시간", "время", "zeit", "dauer", "durée", "tiempo",
                  "duración", "tempo", "durata", "duração", "süre", "adım_süresi", "czas", "czas_kroku", "thời_gian"),
    "data_time": ("データ", "データ時間", "數據", "데이터", "данные", "daten", "données", "datos", "dati", "dados", "veri",
                  "dane", "dữ_liệu"),
}
_BY_NAME: dict[str, Role] = {n: role for table in (NAMES, OTHER_LANGUAGES) for role, names in table.items()
                             for n in names}


# Words that name a part of a step (InternEvo's `fwd_bwd_time`, ESPnet's `forward_time`, `optim_step_time`): a time
# whose name holds one before its `time` is that part's, not the whole step's.
PHASE_WORDS = frozenset({"fwd", "bwd", "forward", "backward", "optim", "optimizer", "opt", "allreduce", "comm",
                         "communication", "allgather", "reduce", "backprop"})


# Words that name a wait or a phase only beside a unit of time (`io 0.12s`, `load_ms 510`, `input 490 µs`,
# `generation: 0.51s`): printed bare they are as often a count or a level (`input 512` tokens, a CPU's `load 3.2`, a
# search's `generation 12`).
TIMED_ONLY: frozenset[str] = frozenset({"io", "fetch", "loader", "dataloader", "load", "input", "generation",
                                        "bch", "smp", "read", "reading", "train", "collate", "feed", "ingest",
                                        "prefetch", "sampler"})
# A wait said in its words, timed (`waiting_for_batch=0.490s`, `batch ready after 490ms`, `loader stall 490 ms`): the
# loop waited on what it names, its input where that is a batch or the data, and a GPU starved waits for its input.
WAIT_WORDS = frozenset({"wait", "waiting", "waited", "stall", "stalled", "blocked", "ready"})
_WAITED_ON = frozenset({"batch", "batches", "data", "input", "loader", "dataloader", "sample", "samples", "next",
                        "load", "loading", "io", "feed", "fetch"})
_STARVED = frozenset({"starved", "starving", "starvation"})


def names_alternation(names: Iterable[str]) -> str:
    """The ASCII names as one regex alternation, longest first, a `_` matching a space too (`global[ _]step`)."""
    return "|".join(sorted((n.replace("_", "[ _]") for n in names if n.isascii()), key=len, reverse=True))


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")


def role_of(norm: str, timed: bool = True) -> Role | None:
    """The role of a normalised name: the whole name, else its longest tail that starts after a `_` (a step's time
    there, with a phase word before it, is that phase's). `timed` False: no unit of time was printed with it, and a
    TIMED_ONLY word names nothing."""
    if norm in _BY_NAME:
        return _BY_NAME[norm] if timed or norm not in TIMED_ONLY else None
    # Chinese and Japanese write a name's words unspaced (`数据耗时`: data, time taken): its tails start at any character.
    sep = "" if "_" not in norm and _CJK.search(norm) else "_"
    parts = list(norm) if not sep else norm.split("_")
    for i in range(1, len(parts)):
        tail = sep.join(parts[i:])
        if tail in _BY_NAME:
            if not timed and tail in TIMED_ONLY:
                return None
            role = _BY_NAME[tail]
            if role == "step_time" and PHASE_WORDS.intersection(parts[:i]):
                return "phase_time"
            if role == "step_time" and _BY_NAME.get(sep.join(parts[:i])) == "data_time":
                return "data_time"  # `data_duration`, `io_duration`: the wait's own time
            if role == "count" and named_loss(norm):  # HiFi-GAN's `Gen Loss Total`: a loss, not a count
                return "loss"
            if role in ("counter", "count") and timed and WAIT_WORDS.intersection(parts[:i]) \
                    and parts[-1] in _WAITED_ON:
                return "data_time"  # `waiting_for_batch`: the batch waited for, not counted
            # `time_<what>` times what it names, not counts it: `time_batch` a step, `time_epoch` an epoch, and
            # anything longer a part of the step (d3rlpy's `time_algorithm_update`)
            if role in ("counter", "count", "epoch") and parts[0] in TIME_HEADS:
                if i == 1 and role == "counter":
                    return "step_time"
                return "epoch_time" if i == 1 and role == "epoch" else "phase_time"
            return role
    if timed and sep and (_STARVED.intersection(parts) or (WAIT_WORDS.intersection(parts)
                                                         and _WAITED_ON.intersection(parts))):
        return "data_time"  # `batch_ready_after`, `loader_stall`, `gpu_starved_for`
    return "loss" if part_loss(norm) or named_loss(norm) else None


# The first word of a name that times what follows it (`time_batch`, `timing_step`; a dict of times printed as
# `times={'step': 0.85}` names its keys `times/step`)
TIME_HEADS = frozenset({"time", "timing", "times", "timings", "timer", "timers", "durations"})
# A name's first word that says the rest is timed (`t_load`, `dt_fetch`, `time_load`): a time without a unit printed
TIMED_HEADS = TIME_HEADS | {"t", "dt"}


def qualified_time(norm: str) -> bool:
    """A time the table knows only by its generic tail, after a word it does not know (habitat's `env-time` and
    `pth-time`): a step's time by default; one that only grows is a running total of that part of the work."""
    parts = norm.split("_")
    if norm in _BY_NAME or len(parts) < 2 or PHASE_WORDS.intersection(parts):
        return False
    longer_tail_known = any("_".join(parts[i:]) in _BY_NAME for i in range(1, len(parts) - 1))
    return not longer_tail_known and _BY_NAME.get(parts[-1]) == "step_time"


def part_loss(norm: str) -> bool:
    """A loss named for its part after the word (MMDetection's `loss_cls`, ESPnet's `loss_ctc`, spaCy's `LOSS NER`),
    not a setting of the loss (Megatron's `loss scale`, a loss's weight): a part's, where the total is printed too."""
    parts = norm.split("_")
    return parts[0] == "loss" and len(parts) > 1 and parts[1] not in _LOSS_SETTINGS and norm not in _BY_NAME


def loss_of_a_part(norm: str) -> bool:
    """A loss named for a part of the total (`loss_cls`, MMDetection's cascade stage `s0.loss_cls`)."""
    return norm not in _BY_NAME and (part_loss(norm) or named_loss(norm))


def named_loss(norm: str) -> bool:
    """A loss named with a word after the word, and not first (HiFi-GAN's `Gen Loss Total`, `s0.loss_cls`), not a
    setting of it (`num_loss_scale`)."""
    parts = norm.split("_")
    return any(w == "loss" and i + 1 < len(parts) and parts[i + 1] not in _LOSS_SETTINGS
               for i, w in enumerate(parts) if i > 0)


_LOSS_SETTINGS = frozenset({"scale", "scaler", "scaling", "weight", "weights", "coef", "coeff", "mask", "fn", "type"})


def phase_of(norm: str) -> Role | None:
    """A time named by a part of the step alone (flashlight's `fwd(ms)`, `crit-fwd(ms)`, `bwd(ms)`, `optim(ms)`),
    asked only of a name printed with a unit of time: that part's time."""
    return "phase_time" if norm.split("_")[-1] in PHASE_WORDS else None


_EPOCH_WORDS = frozenset({"epoch", "epochs", "ep"})


def count_unit(unit: str) -> Role | None:
    """A count word glued to a number (ESPnet's `1epoch:train:1-100batch`): the number counts steps or epochs."""
    word = unit.lower()
    if _COUNT_WORDS.get(word) == "it":
        return "counter"
    return "epoch" if word in _EPOCH_WORDS else None


def unit_name(name: str) -> tuple[Role, float | None] | None:
    """A name that is itself a unit of time or rate (`ms/batch 850.0`, `s/it: 0.85`, `samples/sec 301`) -> (role,
    seconds per unit); None for any other name."""
    key = re.sub(r"\s+", " ", name.strip().lower())
    role, scale = UNITS.get(key, UNITS.get(key.replace(" ", ""), (None, None)))
    if role is not None:
        return role, scale
    if (whole := _canonical_unit(key)) is not None:
        return whole
    # A rate named by what it counts (TensorFlow's `global_step/sec`, `train/tokens/s`): its last `thing/time`.
    tail = re.search(r"(?:^|[\s_./])([a-z]+ ?/ ?[a-z]+)$", key)
    return unit_name(tail.group(1)) if tail and tail.group(1) != key else None


_UNIT = re.compile(r"\s?((?:[^\W\d_]|%)+(?:\s?/\s?[^\W\d_]+|\sper\s[^\W\d_]+)?)")
_PER = re.compile(r"\sper\s")
_SPACED_SLASH = re.compile(r"\s/|/\s")


def unit_of(text: str) -> tuple[str, Role | None, float | None]:
    """The unit that opens `text` (the text right after a number) -> (unit as printed, role, seconds per unit)."""
    m = _UNIT.match(text)  # letters of any script: `0.85秒`, `0.85 с`; `per` spelled out (`1.18 iterations per second`)
    if not m:
        return "", None, None
    unit = m.group(1)
    key = _PER.sub("/", re.sub(r"\s+", " ", unit.lower()))
    if key in UNITS:
        return unit, *UNITS[key]
    if key.replace(" ", "") in UNITS:
        return unit, *UNITS[key.replace(" ", "")]
    if (canonical := _canonical_unit(key)) is not None:
        return unit, *canonical
    if key in MEM_UNITS or key == "%":
        return unit, None, None
    # A slash with a space beside it that makes no unit separates pairs (`time 0.816s / data 0.490s`): the unit is
    # the time before it (`12.5 GB / s` stays a unit not understood, no memory).
    if _SPACED_SLASH.search(unit) and (first := unit_of(text[:m.start(1)] + unit.split("/")[0].rstrip()))[2]:
        return first
    # A word after a space is the next name, not this number's unit; glued letters are a unit we do not know.
    return (unit, None, None) if not text.startswith(" ") else ("", None, None)
