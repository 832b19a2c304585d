"""The defaults the option table shows, and the names its rules may use, as plain values in one place.

The modules that use them (engines, chunking, the measures, the HTTP client) take them from
here, and so does ``plugin.options``, which pytest imports in every run, retrieval or not:
importing those modules instead cost a plain run 25 to 40 ms of dataclasses and regexes
(issue 43: the unused plugin costs at most 1.05x).
"""

#: documents asked of each engine: enough for recall@100 and every table column
DEPTH = 100
#: the chat model of question generation and of the judge
CHAT_MODEL = "openai/gpt-4o-mini"
#: tokens a judge's answer may take (``--max-tokens``): ``##final score: N`` takes a handful
JUDGE_MAX_TOKENS = 32
#: batches an OpenAI-compatible embedder has in flight: a TEI or vLLM server takes several
EMBED_CONCURRENCY = 4
#: chunking: words per window and words shared by neighbouring windows
SPLIT_LENGTH = 400
SPLIT_OVERLAP = 80
#: the hybrid engine's top k of each retriever and of the fusion
KEYWORD_TOP_K = 50
#: the hybrid engine's reranker (off | local:PATH | http:MODEL)
RERANK = "off"
#: the store backends, the default first
BACKENDS = ("embedded", "dsn", "testcontainers")
#: a shadow comparison's knowledge gain: finding the gold documents counts twice ordering them
GAIN_WEIGHTS = "recall@5=2,ndcg@5=1"
#: the measures a summary table shows unless configured otherwise
TABLE_MEASURES = ("hit@1", "hit@3", "hit@5", "hit@10", "hit@20", "mrr")
#: the names a gate rule may give besides measures (``latency.p95``, ``cost``, ``lint.truncated``,
#: ``run.ties``): read by the rule parser, which checks an ini file's rules at start
LATENCY_STATISTICS = ("p50", "p95", "p99", "max", "mean")
USAGE_FIGURES = ("calls", "tokens", "cost")  # per query or in total
CORPUS_LINT_KINDS = ("empty", "tiny", "truncated", "duplicate", "near_duplicate", "missing_id", "control_chars", "bom")
RUN_LINT_KINDS = ("empty", "duplicates", "unknown_ids", "ties")
