"""Pairs of developer facts for consolidation: near misses (one value changed) and true paraphrases.

Consolidation (`cems maintain`) must merge two wordings of one fact and never two facts that differ in one
value: "Staging runs Kubernetes 1.29" is not "Production runs Kubernetes 1.27". Each entry below is a fact,
a paraphrase of it written by hand (same values, other words), and the one-value changes to make of it
(a port, a version, a region, a TTL, a person, a path, an environment, a date, a negation, …). The pairs:

- paraphrase: (fact, paraphrase), the same fact;
- near miss: (fact, fact with one value changed), and (paraphrase, fact with that value changed): one
  value apart, the second also worded otherwise.

    python bench/consolidation_pairs.py            # writes tests/fixtures/consolidation_pairs.json
    python bench/consolidation_pairs.py --evaluate  # and prints how many of each kind merge

Each pair carries its cosine under the local embedding model, so the unit test
(tests/unit/test_consolidation_values.py) runs the whole decision of `cems maintain` (cosine at least the
threshold and the same values) on every pair without loading the model.
"""

# ruff: noqa: E501 - the facts read best one to a line
from __future__ import annotations

import argparse
import json
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "consolidation_pairs.json"

# (fact, paraphrase, ((old, new), ...)): each change replaces `old` by `new` once, in both texts.
FACTS: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    ("Staging runs Kubernetes 1.29.", "The staging cluster is on Kubernetes 1.29.",
     (("Staging", "Production"), ("1.29", "1.27"))),
    ("The API listens on port 8080 in development.", "In development the API server binds to port 8080.",
     (("8080", "8081"), ("development", "production"))),
    ("Run the unit tests with pytest -q before pushing to main.",
     "Before you push to main, run the unit tests with pytest -q.",
     (("-q", "-x"), ("before", "after"))),
    ("Never force-push to the main branch.", "Do not ever force-push to the main branch.",
     (("Never force-push", "Always force-push"), ("main", "release"))),
    ("Alice reviews every database migration before it ships.",
     "Every database migration gets reviewed by Alice before it ships.",
     (("Alice", "Bob"), ("database migration", "frontend change"))),
    ("The session cache TTL is 30 minutes.", "Session cache entries expire after 30 minutes.",
     (("30", "45"), ("minutes", "seconds"))),
    ("The primary Postgres database lives in eu-west-1.", "Our primary Postgres database is hosted in eu-west-1.",
     (("eu-west-1", "us-east-1"), ("primary", "replica"))),
    ("We use Python 3.11 for the backend services.", "The backend services are written against Python 3.11.",
     (("3.11", "3.12"), ("backend", "frontend"))),
    ("Indent Makefiles with tabs.", "Makefiles must be indented with tabs.",
     (("tabs", "spaces"), ("Makefiles", "YAML files"))),
    ("The deploy script lives at scripts/deploy.sh.", "The script that deploys is scripts/deploy.sh.",
     (("scripts/deploy.sh", "scripts/release.sh"), ("deploy", "rollback"))),
    ("Set LOG_LEVEL=debug when reproducing the sync bug.",
     "When reproducing the sync bug, set LOG_LEVEL=debug.",
     (("LOG_LEVEL=debug", "LOG_LEVEL=info"), ("sync", "upload"))),
    ("Carol owns the billing service on-call rotation.", "The on-call rotation for the billing service is Carol's.",
     (("Carol", "Dave"), ("billing", "search"))),
    ("Releases are cut every Tuesday at 10:00 UTC.", "Every Tuesday at 10:00 UTC a release is cut.",
     (("Tuesday", "Thursday"), ("10:00", "14:00"))),
    ("The Redis instance for rate limiting runs on redis-ratelimit.internal:6379.",
     "Rate limiting uses the Redis instance at redis-ratelimit.internal:6379.",
     (("redis-ratelimit.internal:6379", "redis-ratelimit.internal:6380"), ("rate limiting", "sessions"))),
    ("Use ruff for linting instead of flake8.", "Linting is done with ruff rather than flake8.",
     (("ruff", "pylint"), ("flake8", "pycodestyle"))),
    ("The frontend is built with Vite 5.", "Vite 5 builds the frontend.",
     (("Vite 5", "Vite 4"), ("frontend", "docs site"))),
    ("Database backups are kept for 14 days.", "We retain database backups for 14 days.",
     (("14", "30"), ("days", "weeks"))),
    ("The CI pipeline times out after 45 minutes.", "After 45 minutes the CI pipeline is killed by a timeout.",
     (("45", "60"), ("CI pipeline", "nightly build"))),
    ("Feature flags are stored in LaunchDarkly.", "LaunchDarkly holds our feature flags.",
     (("LaunchDarkly", "Unleash"), ("Feature flags", "Remote configs"))),
    ("Send security reports to security@acme.io.", "Security reports go to security@acme.io.",
     (("security@acme.io", "infosec@acme.io"), ("security", "abuse"))),
    ("The mobile app supports iOS 16 and later.", "iOS 16 or newer is required by the mobile app.",
     (("16", "15"), ("iOS", "Android"))),
    ("Payments go through Stripe in production.", "In production, payments are processed by Stripe.",
     (("Stripe", "Adyen"), ("production", "staging"))),
    ("The monorepo uses pnpm workspaces.", "Our monorepo is managed with pnpm workspaces.",
     (("pnpm", "yarn"), ("monorepo", "docs repo"))),
    ("Docker images are pushed to ghcr.io/acme.", "We push our Docker images to ghcr.io/acme.",
     (("ghcr.io/acme", "docker.io/acme"), ("Docker images", "Helm charts"))),
    ("The JWT access token expires after 15 minutes.", "Access tokens (JWT) are valid for 15 minutes.",
     (("15", "60"), ("access", "refresh"))),
    ("Dependabot opens pull requests weekly.", "Every week Dependabot opens its pull requests.",
     (("weekly", "daily"), ("Dependabot", "Renovate"))),
    ("The search service uses Elasticsearch 8.11.", "Elasticsearch 8.11 backs the search service.",
     (("8.11", "7.17"), ("search", "logging"))),
    ("Config for the worker is read from config/worker.yaml.",
     "The worker reads its configuration from config/worker.yaml.",
     (("config/worker.yaml", "config/worker.toml"), ("worker", "scheduler"))),
    ("Emails are sent asynchronously through the job queue.",
     "The job queue sends emails asynchronously.",
     (("asynchronously", "synchronously"), ("Emails", "Webhooks"))),
    ("Migrations must run before the new code is deployed.",
     "Before the new code is deployed, the migrations have to run.",
     (("before", "after"), ("Migrations", "Backfills"))),
    ("The GraphQL gateway is owned by the platform team.",
     "The platform team owns the GraphQL gateway.",
     (("platform", "payments"), ("GraphQL", "REST"))),
    ("Use Node 20 for the build.", "The build needs Node 20.",
     (("20", "18"), ("build", "test suite"))),
    ("We deploy to production with Argo CD.", "Production deployments are done with Argo CD.",
     (("Argo CD", "Flux"), ("production", "staging"))),
    ("The load balancer health check hits /healthz every 10 seconds.",
     "Every 10 seconds the load balancer health check requests /healthz.",
     (("/healthz", "/readyz"), ("10", "30"))),
    ("Logs are shipped to Datadog.", "We ship our logs to Datadog.",
     (("Datadog", "Grafana Loki"), ("Logs", "Traces"))),
    ("The maximum upload size is 25 MB.", "Uploads are limited to 25 MB at most.",
     (("25", "50"), ("MB", "GB"))),
    ("Don't run the integration tests on the shared staging database.",
     "The integration tests must not run against the shared staging database.",
     (("Don't run", "Always run"), ("staging", "production"))),
    ("Frank is the tech lead for the checkout redesign.", "The checkout redesign's tech lead is Frank.",
     (("Frank", "Grace"), ("checkout", "onboarding"))),
    ("The analytics warehouse is BigQuery in project acme-analytics.",
     "Our analytics warehouse: BigQuery, in project acme-analytics.",
     (("acme-analytics", "acme-data"), ("BigQuery", "Snowflake"))),
    ("We squash-merge pull requests into main.", "Pull requests are squash-merged into main.",
     (("squash-merge", "rebase-merge"), ("main", "develop"))),
    ("Strings in the Python code use double quotes.", "The Python code uses double quotes for strings.",
     (("double", "single"), ("Python", "TypeScript"))),
    ("The cron job for invoices runs at 02:00 UTC.", "Invoices are generated by a cron job at 02:00 UTC.",
     (("02:00", "03:30"), ("invoices", "reports"))),
    ("The nightly build publishes to the beta channel.", "Each nightly build goes out on the beta channel.",
     (("beta", "stable"), ("nightly", "weekly"))),
    ("Max connections in the Postgres pool is 20.", "The Postgres connection pool allows 20 connections at most.",
     (("20", "50"), ("Postgres", "MySQL"))),
    ("The design system lives in packages/ui.", "packages/ui holds the design system.",
     (("packages/ui", "packages/components"), ("design system", "icon set"))),
    ("Henry approves infrastructure changes in Terraform.",
     "Infrastructure changes in Terraform need Henry's approval.",
     (("Henry", "Irene"), ("Terraform", "Pulumi"))),
    ("API responses are cached by the CDN for 5 minutes.", "The CDN caches API responses for 5 minutes.",
     (("5", "10"), ("API responses", "images"))),
    ("The Kafka cluster keeps messages for 7 days.", "Messages stay in the Kafka cluster for 7 days.",
     (("7", "3"), ("Kafka", "Pulsar"))),
    ("Secrets are stored in HashiCorp Vault, not in environment files.",
     "We keep secrets in HashiCorp Vault rather than in environment files.",
     (("HashiCorp Vault", "AWS Secrets Manager"), ("Secrets", "Certificates"))),
    ("The admin dashboard is at https://admin.acme.dev.", "You reach the admin dashboard at https://admin.acme.dev.",
     (("https://admin.acme.dev", "https://admin.acme.io"), ("admin", "status"))),
    ("Enable strict mode in tsconfig.json.", "tsconfig.json should have strict mode enabled.",
     (("strict", "loose"), ("tsconfig.json", "jsconfig.json"))),
    ("Code freeze for the holiday release starts on 2026-12-18.",
     "The holiday release code freeze begins 2026-12-18.",
     (("2026-12-18", "2026-12-11"), ("holiday", "spring"))),
    ("The staging environment scales to 3 replicas.", "In staging we run 3 replicas.",
     (("3", "5"), ("staging", "production"))),
    ("Commit messages follow Conventional Commits.", "We write commit messages in the Conventional Commits style.",
     (("Conventional Commits", "Gitmoji"), ("Commit messages", "Branch names"))),
    ("The ML models are trained on a g5.xlarge instance.", "Model training runs on a g5.xlarge instance.",
     (("g5.xlarge", "p4d.24xlarge"), ("trained", "served"))),
    ("The CLI is distributed through Homebrew.", "We distribute the CLI with Homebrew.",
     (("Homebrew", "Scoop"), ("CLI", "desktop app"))),
    ("The orders table is partitioned by month.", "We partition the orders table by month.",
     (("month", "week"), ("orders", "events"))),
    ("Rate limit for the public API is 100 requests per minute.",
     "The public API allows 100 requests per minute.",
     (("100", "1000"), ("public", "internal"))),
    ("Judy maintains the Android release pipeline.", "The Android release pipeline is maintained by Judy.",
     (("Judy", "Karl"), ("Android", "iOS"))),
    ("Use the `make lint` target before opening a pull request.",
     "Before opening a pull request, run `make lint`.",
     (("`make lint`", "`make check`"), ("before", "after"))),
    ("The websocket server sends a ping every 25 seconds.", "Every 25 seconds the websocket server pings.",
     (("25", "55"), ("websocket", "SSE"))),
    ("Tests run in parallel with pytest-xdist.", "We parallelise the tests with pytest-xdist.",
     (("pytest-xdist", "pytest-parallel"), ("Tests", "Benchmarks"))),
    ("The OpenAPI spec is generated from the FastAPI app.", "We generate the OpenAPI spec from the FastAPI app.",
     (("FastAPI", "Flask"), ("OpenAPI", "AsyncAPI"))),
    ("Sentry alerts go to the #backend-alerts channel.", "The #backend-alerts channel receives the Sentry alerts.",
     (("#backend-alerts", "#frontend-alerts"), ("Sentry", "PagerDuty"))),
    ("The legacy billing API is deprecated and will be removed in Q3 2026.",
     "In Q3 2026 the deprecated legacy billing API is removed.",
     (("Q3", "Q1"), ("billing", "shipping"))),
    ("Production database credentials rotate every 90 days.",
     "Every 90 days the production database credentials are rotated.",
     (("90", "30"), ("Production", "Staging"))),
    ("The image thumbnails are 256px wide.", "Thumbnails of images have a width of 256px.",
     (("256px", "512px"), ("thumbnails", "previews"))),
    ("The auth service is written in Go 1.22.", "Go 1.22 is what the auth service is written in.",
     (("1.22", "1.21"), ("auth", "notification"))),
    ("Mallory is not allowed to merge into the release branch.",
     "Mallory may not merge into the release branch.",
     (("Mallory", "Niaj"), ("release", "hotfix"))),
    ("The feature branch naming scheme is feat/<ticket>-<slug>.",
     "Feature branches are named feat/<ticket>-<slug>.",
     (("feat/<ticket>-<slug>", "feature/<ticket>-<slug>"), ("feature", "bugfix"))),
    ("Error logs are kept for 30 days in CloudWatch.", "CloudWatch keeps the error logs for 30 days.",
     (("30", "90"), ("Error", "Debug"))),
    ("Preview environments are created for every pull request on Vercel.",
     "Vercel creates a preview environment for every pull request.",
     (("Vercel", "Netlify"), ("pull request", "tag"))),
    ("Olivia schedules the sprint planning on Mondays.", "Sprint planning is scheduled by Olivia on Mondays.",
     (("Olivia", "Peggy"), ("Mondays", "Wednesdays"))),
    ("The GPU nodes use the nvidia.com/gpu resource name.",
     "nvidia.com/gpu is the resource name of the GPU nodes.",
     (("nvidia.com/gpu", "amd.com/gpu"), ("GPU", "inference"))),
    ("The queue worker retries a failed job 3 times.", "A failed job is retried 3 times by the queue worker.",
     (("3", "5"), ("failed", "timed out"))),
    ("We use SQLAlchemy 2.0 with the async engine.", "SQLAlchemy 2.0 is used, with its async engine.",
     (("2.0", "1.4"), ("async", "sync"))),
    ("The docs site is deployed from the gh-pages branch.", "The gh-pages branch is what the docs site deploys from.",
     (("gh-pages", "docs-deploy"), ("docs", "blog"))),
    ("The VPN is required to reach the staging admin panel.",
     "You need the VPN to get to the staging admin panel.",
     (("staging", "production"), ("VPN", "bastion host"))),
    ("The pre-commit hooks run black and isort.", "Black and isort run as pre-commit hooks.",
     (("isort", "mypy"), ("pre-commit", "pre-push"))),
    ("Customer data is stored only in the EU region.", "We store customer data in the EU region only.",
     (("EU", "US"), ("Customer", "Telemetry"))),
    ("The Helm chart version for the api is 4.2.0.", "The api uses Helm chart version 4.2.0.",
     (("4.2.0", "4.3.0"), ("api", "worker"))),
    ("Trent is on vacation until December 5.", "Until December 5 Trent is on vacation.",
     (("Trent", "Victor"), ("December 5", "December 12"))),
    ("The e2e tests run with Playwright in headless Chromium.",
     "Playwright runs the e2e tests in headless Chromium.",
     (("Chromium", "Firefox"), ("Playwright", "Cypress"))),
    ("The staging Kafka topic for orders is orders.v2.", "orders.v2 is the staging Kafka topic for orders.",
     (("orders.v2", "orders.v3"), ("staging", "production"))),
    ("Memory limit for the api container is 512Mi.", "The api container has a 512Mi memory limit.",
     (("512Mi", "1Gi"), ("api", "worker"))),
    ("The data pipeline runs hourly in Airflow.", "Airflow runs the data pipeline every hour.",
     (("Airflow", "Dagster"), ("data", "export"))),
    ("Wendy signs off on every production deploy.", "Every production deploy needs Wendy's sign-off.",
     (("Wendy", "Xavier"), ("production", "staging"))),
    ("Bump the major version when the public API changes.",
     "When the public API changes, bump the major version.",
     (("major", "minor"), ("public", "internal"))),
    ("Use UTC timestamps in all log lines.", "All log lines carry UTC timestamps.",
     (("UTC", "local time"), ("log lines", "metrics"))),
    ("The search index is rebuilt every night at 03:00.", "Every night at 03:00 the search index gets rebuilt.",
     (("03:00", "04:00"), ("search", "recommendation"))),
    ("The mobile team uses Kotlin 1.9 for Android.", "Android development on the mobile team uses Kotlin 1.9.",
     (("1.9", "2.0"), ("Android", "Wear OS"))),
    ("Webhooks are signed with HMAC-SHA256.", "We sign webhooks using HMAC-SHA256.",
     (("HMAC-SHA256", "HMAC-SHA1"), ("Webhooks", "Callbacks"))),
    ("Sessions are stored in Redis, not in the database.", "We keep sessions in Redis rather than the database.",
     (("Redis", "Memcached"), ("Sessions", "Carts"))),
    ("The coverage threshold in CI is 80 percent.", "CI requires 80 percent coverage.",
     (("80", "90"), ("coverage", "mutation score"))),
    ("Yvonne is the product owner for search.", "The product owner for search is Yvonne.",
     (("Yvonne", "Zara"), ("search", "checkout"))),
    ("Local development uses docker compose with the dev profile.",
     "For local development we run docker compose with the dev profile.",
     (("dev", "test"), ("docker compose", "tilt"))),
    ("The CDN is Cloudflare in front of the marketing site.", "Cloudflare is the CDN in front of the marketing site.",
     (("Cloudflare", "Fastly"), ("marketing", "docs"))),
    ("Pagination defaults to 50 items per page.", "By default a page holds 50 items.",
     (("50", "25"), ("items", "rows"))),
    ("The iOS app is built with Xcode 15.4.", "We build the iOS app with Xcode 15.4.",
     (("15.4", "16.0"), ("iOS", "macOS"))),
    ("The read replicas lag at most 2 seconds behind the primary.",
     "At most 2 seconds is how far the read replicas lag behind the primary.",
     (("2", "10"), ("at most", "at least"))),
    ("Ivan handles the quarterly access review.", "The quarterly access review is handled by Ivan.",
     (("Ivan", "Judy"), ("quarterly", "monthly"))),
    ("Use `uv sync` to install the Python dependencies.", "The Python dependencies are installed with `uv sync`.",
     (("`uv sync`", "`pip install -r requirements.txt`"), ("Python", "docs"))),
    ("The billing export writes CSV files to s3://acme-billing/exports.",
     "CSV files of the billing export go to s3://acme-billing/exports.",
     (("s3://acme-billing/exports", "s3://acme-billing/archive"), ("CSV", "JSON"))),
    ("The app server runs 4 Gunicorn workers.", "Gunicorn runs 4 workers on the app server.",
     (("4", "8"), ("Gunicorn", "Uvicorn"))),
)


def pairs() -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for fact, paraphrase, changes in FACTS:
        out.append({"kind": "paraphrase", "a": fact, "b": paraphrase})
        for old, new in changes:
            assert old in fact, f"{old!r} is not in {fact!r}"
            changed = fact.replace(old, new, 1)
            out.append({"kind": "near_miss", "a": fact, "b": changed, "changed": f"{old} -> {new}"})
            out.append({"kind": "near_miss", "a": paraphrase, "b": changed, "changed": f"{old} -> {new}"})
    return out


def add_cosines(found: list[dict]) -> str:
    """Each pair's cosine with the local embedding model (the default one), so the unit test can run the
    whole decision of `cems maintain` without loading a model. Returns the model's name."""
    import numpy as np

    from cems_cli.config import load_settings
    from cems_cli.embedding import get_embedder

    settings = load_settings(embedding_backend="local", embedding_model=None)
    embedder = get_embedder(settings)
    texts = sorted({t for p in found for t in (p["a"], p["b"])})
    vectors = dict(zip(texts, np.asarray(embedder.embed(texts), dtype=np.float32), strict=True))
    for pair in found:
        x, y = vectors[pair["a"]], vectors[pair["b"]]
        pair["cosine"] = round(float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y))), 4)
    return str(settings.resolved_embedding_model)


def evaluate(found: list[dict]) -> None:
    """How many pairs of each kind the cosine alone (the old decision) and `cems maintain` now merge."""
    from cems_cli.engine.maintain import SIMILARITY_THRESHOLD, same_fact
    from cems_cli.text.values import same_values

    for kind in ("near_miss", "paraphrase"):
        chosen = [p for p in found if p["kind"] == kind]
        alike = sum(p["cosine"] >= SIMILARITY_THRESHOLD for p in chosen)
        gate = sum(same_values(p["a"], p["b"]) for p in chosen)
        merged = sum(same_fact(p["a"], p["b"], p["cosine"]) for p in chosen)
        print(f"{kind}: {len(chosen)} pairs; cosine >= {SIMILARITY_THRESHOLD} (before): {alike}; "
              f"same values: {gate}; merged by cems maintain now: {merged}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaluate", action="store_true", help="print how many pairs of each kind merge")
    args = parser.parse_args()
    found: list[dict] = list(pairs())
    model = add_cosines(found)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"model": model, "pairs": found}, indent=1, ensure_ascii=False) + "\n",
                   encoding="utf-8")
    counts = {kind: sum(p["kind"] == kind for p in found) for kind in ("near_miss", "paraphrase")}
    print(f"wrote {OUT.relative_to(OUT.parents[2])}: {counts}")
    if args.evaluate:
        evaluate(found)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
