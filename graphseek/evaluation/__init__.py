"""Evaluation: dataset loaders, metrics, LLM-as-judge, a resumable runner and reports.

Modules: `datasets` (loaders), `metrics`, `judge`, `scoring` (one answer -> metrics and the
outcome right / wrong / abstained), `configs`, `system` (the system under test), `index_cache`,
`records` (records.jsonl I/O), `runner` (run_evaluation), `retrieval` (retrieval-only scores),
`report` (table.md, summary.json, plots) and `cli` (`graphseek eval`).

    from graphseek.evaluation import load_dataset, run_eval
    run_eval(["2wiki"], questions="0:200", topologies=["naive", "dual_agent"], out="eval-out")

`graphseek eval` (see `graphseek.evaluation.cli`) is the command-line front end.
"""

from graphseek.evaluation.cli import (
    add_eval_arguments,
    eval_main,
    make_configs,
    run_eval,
    run_eval_command,
)  # noqa: E402,I001
from graphseek.evaluation.datasets import (
    DATASETS,
    HELDOUT_FILES,
    Dataset,
    DatasetError,
    EvalQuestion,
    default_data_dir,
    load_dataset,
    load_questions_file,
    parse_slice,
)
from graphseek.evaluation.judge import Judge, Judgement, JudgeVerdict, rule_judgement
from graphseek.evaluation.metrics import (
    aggregate,
    all_in_top_k,
    answer_metrics,
    exact_match,
    normalize_answer,
    recall_at_k,
    retrieval_metrics,
    retrieval_prf,
    sub_exact_match,
    token_f1,
)
from graphseek.evaluation.report import render_table, summarise, write_report
from graphseek.evaluation.runner import (
    ApiSystem,
    EvalConfig,
    RetrievalReport,
    RetrieverScores,
    baseline_configs,
    cached_index,
    evaluate_retrieval,
    get_retriever,
    load_records,
    register_retriever,
    registered_retrievers,
    run_evaluation,
)
from graphseek.evaluation.scoring import OUTCOMES, Outcome, record_outcome, score_answer

__all__ = [
    "DATASETS",
    "HELDOUT_FILES",
    "OUTCOMES",
    "Outcome",
    "ApiSystem",
    "Dataset",
    "DatasetError",
    "EvalConfig",
    "EvalQuestion",
    "Judge",
    "JudgeVerdict",
    "Judgement",
    "RetrievalReport",
    "RetrieverScores",
    "add_eval_arguments",
    "aggregate",
    "all_in_top_k",
    "answer_metrics",
    "baseline_configs",
    "cached_index",
    "default_data_dir",
    "eval_main",
    "evaluate_retrieval",
    "exact_match",
    "get_retriever",
    "load_dataset",
    "load_questions_file",
    "load_records",
    "make_configs",
    "normalize_answer",
    "parse_slice",
    "recall_at_k",
    "record_outcome",
    "register_retriever",
    "registered_retrievers",
    "render_table",
    "retrieval_metrics",
    "retrieval_prf",
    "rule_judgement",
    "run_eval",
    "run_eval_command",
    "run_evaluation",
    "score_answer",
    "sub_exact_match",
    "summarise",
    "token_f1",
    "write_report",
]
