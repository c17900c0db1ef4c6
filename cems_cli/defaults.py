"""Defaults that more than one layer reads, defined once.

Stdlib only and cheap to import: the hooks read these on every prompt. `Settings` (config.py), the library
(api/), the hooks and the evaluation all take their defaults from here, so a value cannot drift between a
front end and the engine.
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` costs ~25 ms to import; annotations are strings anyway
if TYPE_CHECKING:
    from typing import Final  # a choice marked Final is typed as its literal, as Settings' Literals want

# What the prompt hook injects (CEMS_RECALL_*), measured with `cems eval --sessions` (bench/RESULTS.md).
# On the sets written by others the answer is often the fourth-best memory (an earlier answer before the
# fact changed, or failures of a command above the memory of what fixed it), and a floor on confidence
# cannot tell it from the noise above it. 4 at >= 0.7 of the best, against 3 at >= 0.6, asking each set's
# questions again on the same stores: fact recall bench/sessions 0.913 -> 0.922, m-claude 0.708 -> 0.792,
# swebench-mini 0.700 -> 0.750, chef-chopsky 0.583 -> 0.625; noise 29/61/61/74% -> 31/61/62/73%; lines per
# question 2.29/2.58/2.04/2.92 -> 2.40/2.85/2.13/3.69. A floor of 0.6 or 0.65 adds lines and noise for no fact
# more, 0.75 loses facts; a fifth line finds 3 facts more on two sets for up to 0.7 lines a question more.
RECALL_LIMIT = 4  # CEMS_RECALL_LIMIT
RECALL_TOKEN_BUDGET = 1000  # CEMS_RECALL_TOKEN_BUDGET
RECALL_TIME_BUDGET = 1.5  # seconds; CEMS_RECALL_TIME_BUDGET
RECALL_MIN_SCORE = 0.1  # CEMS_RECALL_MIN_SCORE: below this a memory is more likely noise than help
RECALL_MIN_RELATIVE = 0.7  # CEMS_RECALL_MIN_RELATIVE: nor below this share of the best result's score
# CEMS_RECALL_MIN_SIMILARITY: a memory that shares no word with the prompt is injected only this close in
# meaning. Stricter than `cems search` (MIN_SIMILARITY), where the user asked: MiniLM puts nonsense such as
# "xyzzy plugh frobnicate" at 0.23 from a real memory. No useful memory of the capture benchmark was lost.
RECALL_MIN_SIMILARITY = 0.3
# CEMS_RECALL_MIN_CONFIDENCE: nothing less likely than this to answer the prompt is injected, nor shown by
# `cems search` or the library's `search` unless all results are asked for (a probability,
# retrieval/confidence.py). Chosen on bench/confidence_sessions.py's curve, every project held out: at 0.15
# bench/sessions keeps fact recall 0.904 (0.913 with no floor) at noise 29.1% (29.6%), 2.32 lines a question
# (2.45); m-claude 0.583 / 69.5% / 2.65, swebench-mini 0.450 / 75.9% / 2.09 (71.5% and 79.3% noise with
# none). A higher floor trims little noise and costs answers that share no word with the question:
# "which package manager" finds "In this repo we use pnpm, never npm" at cosine 0.33 only, 0.19, where a
# query about nothing stored ("zebra quantum banana", cosine 0.17) gets 0.10; at 0.25 bench/sessions' recall
# fell to 0.887 and that answer was no longer shown.
RECALL_MIN_CONFIDENCE = 0.15

# What the SessionStart hook injects: pinned guidelines, preferences, recent context of the project.
PROFILE_TOKEN_BUDGET = 2000

# `cems search` and the library's `search`: a memory sharing no word with the query needs this cosine.
MIN_SIMILARITY = 0.15  # CEMS_MIN_SIMILARITY

# A guard rule whose regex cannot be checked within the PreToolUse hook's time budget counts as matched
# ("deny"), or is skipped ("allow"): CEMS_RULES_ON_TIMEOUT, read from the environment or config.toml only
# (not a live setting: the agent can run `cems config set`, and must not be able to relax its rules).
RULES_ON_TIMEOUT: Final = "deny"

# Storage and embedding.
EMBEDDING_BACKEND = "local"  # a `cems.embedders` entry point (cems_cli/plugins.py)
EMBEDDING_BATCH_SIZE = 64
# The largest memory text (and search query) accepted, in UTF-8 bytes: embedding cost grows with the text
# (measurements in cems_cli/embedding/limits.py).
MAX_MEMORY_BYTES = 16 * 1024

# Search and ranking (Settings fields of the same names in lower case; the retrieval stages' own parameter
# defaults are these too). Measured on LoCoMo and the capture benchmark: bench/RESULTS.md.
SEARCH_MODE: Final = "hybrid"
SEARCH_LIMIT = 5
FUSION: Final = "linear"  # normalised BM25 + weighted cosine, keeps score gaps; "rrf": reciprocal rank fusion
CONTEXT_BUDGET = 2000  # tokens a search result set may fill (cems search); the prompt hook has its own
FUSION_VECTOR_WEIGHT = 1.5  # linear fusion: weight of the cosine beside normalised BM25
LEXICAL_COVERAGE = 1.0  # linear fusion: share of a whole-query BM25 match a lexical match must reach
HYBRID_VECTOR_WEIGHT = 0.3  # rrf fusion only: blend of the cosine score
RRF_K = 60
RRF_ORIGINAL_WEIGHT = 2.0
RRF_EXPANSION_WEIGHT = 1.0
SESSION_WINDOW = 2  # session context: neighbours within this many places lend score
SESSION_NEIGHBOUR_WEIGHT = 0.5
SESSION_WEIGHT = 0.2
# BM25's phrase bonus: query terms side by side in a memory add this much of their mean IDF
# (CEMS_PHRASE_WEIGHT). LoCoMo Recall@10 +0.003 at 1.0 when it was chosen; bench/RESULTS.md has both sets.
PHRASE_WEIGHT = 1.0
# Ranking stages measured but off by default, switched on by name (CEMS_EXPERIMENTS, comma-separated;
# retrieval/experiments.py maps each name to its stage): `time_cue` ("in March") and `time_answer` ("when
# did …?") each helped LoCoMo alone (R@10 +0.005, +0.009) and changed nothing on the capture benchmark, and a
# heuristic is on by default only where it helps on more than one data set (bench/RESULTS.md).
EXPERIMENTS: tuple[str, ...] = ()
# A memory that a newer one of the same project says was replaced ("switch the event stream from Kafka to
# NATS") weighs this much (retrieval/supersede.py; 1.0: off). Measured in bench/RESULTS.md.
SUPERSEDED_WEIGHT = 0.5
RERANK_INPUT_LIMIT = 40
RELEVANCE_THRESHOLD = 0.0  # seed 000 stage 7 says 0.3; the evidence floor (MIN_SIMILARITY) does that job
STRONG_SIGNAL_THRESHOLD = 0.85
STRONG_SIGNAL_GAP = 0.15

# LLM stages (any OpenAI-compatible endpoint) and the Ollama reranker.
LLM_MODEL = "gpt-4o-mini"
LLM_TIMEOUT = 2.0  # seconds per call: a prompt hook waits at most RECALL_TIME_BUDGET in all
OLLAMA_URL = "http://127.0.0.1:11434"
# The background model (capture's extraction, summaries): `openai`, the OpenAI-compatible endpoint of the
# LLM settings above, or `claude-code`, the user's own Claude Code CLI run headless (claude_code_llm.py).
LLM_BACKEND: Final = "openai"
CLAUDE_CODE_PATH = "claude"  # found on PATH
CLAUDE_CODE_MODEL = "haiku"  # the small model: extraction and summaries need no more
CLAUDE_CODE_TIMEOUT = 180.0  # seconds per call; a headless CLI start alone takes a few
# Sessions started by CEMS itself (a `claude -p` call of that backend, an extraction request that reaches a
# Claude Code based endpoint) carry this marker in their first prompt; the observer ignores any transcript
# that contains it in a user prompt, so CEMS never learns from its own LLM calls.
NO_OBSERVE_MARKER = "<cems:no-observe/>"
RERANKER_MODEL = "dengcao/Qwen3-Reranker-0.6B:Q8_0"

# Lifecycle (cems maintain): captured `context` memories neither accessed nor recalled for this long
# expire; archived memories are deleted this long after they were archived.
CONTEXT_TTL_DAYS = 90.0
ARCHIVE_GRACE_DAYS = 30.0

# The observer (capture/observer_settings.py): when a quiet session is finalized, how turns are chunked,
# LLM extraction batches and back-off, reading and committing, the daemon's clocks.
OBSERVER_IDLE_SECONDS = 300.0
OBSERVER_CHUNK_MAX_CHARS = 8000
OBSERVER_CHUNK_MAX_TOOLS = 40
OBSERVER_BATCH_CHARS = 12000
OBSERVER_BATCH_MAX_CHARS = 32000
OBSERVER_LLM_TIMEOUT = 90.0
OBSERVER_BACKOFF_INITIAL = 30.0
OBSERVER_BACKOFF_MAX = 900.0
OBSERVER_LLM_MAX_ATTEMPTS = 12
OBSERVER_COMMIT_BYTES = 4 * 1024 * 1024
OBSERVER_MAX_LINE_BYTES = 32 * 1024 * 1024
OBSERVER_COMMIT_CHUNKS = 32
OBSERVER_TICK_SECONDS = 15.0
OBSERVER_RESCAN_SECONDS = 600.0
OBSERVER_MAINTAIN_SECONDS = 86400.0  # cems maintain once a day; 0 = never

# Summaries of groups of memories (retrieval/raptor.py, engine/summaries.py): memories at least this alike
# (cosine of all-MiniLM-L6-v2) share a group of at most SUMMARY_GROUP_SIZE; an overview-worded question
# ("what have we done on billing this month?") gets up to SUMMARY_RESULTS of them first (CEMS_SUMMARIES).
SUMMARIES = True
SUMMARY_SIMILARITY = 0.6
SUMMARY_GROUP_SIZE = 12
SUMMARY_RESULTS = 2
SUMMARY_MAX_MEMORIES = 5_000  # a project's latest memories grouped (the work grows with memories x groups)

# A team server's limits on every application role (`ALTER ROLE … SET`, by `cems admin init` and `cems admin
# grant`): a member's lock or open transaction holds the others up this long at most, and no statement of
# theirs runs longer. Milliseconds. A search waits 5 s for a lock before it fails; the longest statement of a
# member's own maintenance at 100k memories takes well under 2 minutes.
DB_LOCK_TIMEOUT_MS = 5_000
DB_STATEMENT_TIMEOUT_MS = 120_000
DB_IDLE_IN_TRANSACTION_TIMEOUT_MS = 60_000
# What one member may hold of the server at once (`ALTER ROLE … CONNECTION LIMIT`, and temp_file_limit where
# the administrator is a superuser: it is a superuser's setting). A member's hooks, observer and viewer use a
# few connections; a sort or hash spilling past 1 GB of temporary files is no query CEMS runs.
DB_MEMBER_CONNECTION_LIMIT = 20
DB_MEMBER_TEMP_FILE_LIMIT = "1GB"

# A memory's history keeps the newest this many edits of it (sql/020_memory_edits.sql holds the same number:
# a session's context record, rewritten as the session goes on, must not grow a row per rewrite forever).
EDITS_KEPT = 20
