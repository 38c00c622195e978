-- Views and macros stored in the evalduck DuckDB file, so the plain `duckdb` CLI can use them.
-- Recreated by every schema migration (flows/store/schema.py); changing this file means a new
-- schema version. Documented in docs/schema.md and docs/sql.md.

-- Run references, as the evalduck CLI understands them.
CREATE OR REPLACE MACRO latest_run() AS
    (SELECT run_id FROM runs ORDER BY started_at DESC, run_id DESC LIMIT 1);

CREATE OR REPLACE MACRO previous_run() AS
    (SELECT run_id FROM runs ORDER BY started_at DESC, run_id DESC LIMIT 1 OFFSET 1);

CREATE OR REPLACE MACRO run_named(run_name) AS
    (SELECT run_id FROM runs WHERE name = run_name ORDER BY started_at DESC, run_id DESC LIMIT 1);

-- 0.975 quantile of Student's t for df > 100 (Cornish-Fisher, error < 1e-10 there);
-- exact values for df 1..100 are in the table t_quantile_975.
CREATE OR REPLACE MACRO t975_large_df(v) AS
    1.959963984540054 + 2.372271230298562 / CAST(v AS DOUBLE) + 2.8224986157396112 / pow(CAST(v AS DOUBLE), 2)
    + 2.555849679507722 / pow(CAST(v AS DOUBLE), 3) + 1.5895340533938225 / pow(CAST(v AS DOUBLE), 4);

CREATE OR REPLACE MACRO t975(v) AS
    CASE
        WHEN v IS NULL OR v < 1 THEN NULL
        WHEN v <= 100 THEN (SELECT q FROM t_quantile_975 WHERE t_quantile_975.df = CAST(v AS INTEGER))
        ELSE t975_large_df(v)
    END;

-- A scorer's direction in a run: run_scorers, filled at run start; a scorer it does not list (a cell written
-- by hand) is higher-is-better.
CREATE OR REPLACE MACRO scorer_higher_is_better(run, scorer) AS
    coalesce((SELECT bool_and(higher_is_better) FROM run_scorers WHERE run_id = run AND scorer_id = scorer), true);

-- One row per run and scorer. Means are over scored cells only (score is NULL otherwise).
CREATE OR REPLACE VIEW run_scorer_summary AS
SELECT
    s.run_id,
    r.name,
    r.started_at,
    s.scorer_id,
    coalesce(bool_and(d.higher_is_better), true) AS higher_is_better,
    string_agg(DISTINCT s.scorer_version, ',' ORDER BY s.scorer_version) AS scorer_version,
    string_agg(DISTINCT s.judge_model, ',' ORDER BY s.judge_model) AS judge_model,
    count(*) AS n_cells,
    count(*) FILTER (WHERE s.status = 'scored') AS n_scored,
    count(*) FILTER (WHERE s.status = 'error') AS n_errors,
    count(*) FILTER (WHERE s.status = 'skipped') AS n_skipped,
    avg(s.score) AS mean_score,
    stddev_samp(s.score) AS stddev_score,
    min(s.score) AS min_score,
    max(s.score) AS max_score,
    sum(s.prompt_tokens) AS prompt_tokens,
    sum(s.completion_tokens) AS completion_tokens,
    sum(s.cost) AS cost,
    avg(s.latency_s) AS mean_latency_s
FROM scores AS s
LEFT JOIN runs AS r ON r.run_id = s.run_id
LEFT JOIN run_scorers AS d ON d.run_id = s.run_id AND d.scorer_id = s.scorer_id
GROUP BY s.run_id, r.name, r.started_at, s.scorer_id;

-- One row per run with its counts, newest first.
CREATE OR REPLACE VIEW run_overview AS
SELECT
    r.run_id, r.name, r.dataset, r.dataset_hash, r.status, r.started_at, r.finished_at,
    r.config, r.flow_run_id, r.evalduck_version,
    coalesce(i.n_items, 0) AS n_items,
    coalesce(s.n_scores, 0) AS n_scores,
    coalesce(s.n_errors, 0) AS n_errors
FROM runs AS r
LEFT JOIN (SELECT run_id, count(*) AS n_items FROM items GROUP BY run_id) AS i ON i.run_id = r.run_id
LEFT JOIN (
    SELECT run_id,
           count(*) FILTER (WHERE status = 'scored') AS n_scores,
           count(*) FILTER (WHERE status = 'error') AS n_errors
    FROM scores GROUP BY run_id
) AS s ON s.run_id = r.run_id
ORDER BY r.started_at DESC, r.run_id DESC;

-- The per-scorer side of one run that compare_runs needs (cheaper than the full summary view).
CREATE OR REPLACE MACRO run_scorer_side(run) AS TABLE
SELECT
    scorer_id,
    avg(score) AS mean_score,
    count(*) FILTER (WHERE status = 'scored') AS n_scored,
    count(*) FILTER (WHERE status = 'error') AS n_errors,
    string_agg(DISTINCT scorer_version, ',' ORDER BY scorer_version) AS scorer_version,
    string_agg(DISTINCT judge_model, ',' ORDER BY judge_model) AS judge_model
FROM scores
WHERE run_id = run
GROUP BY scorer_id;

-- Run B against run A, one row per scorer scored (at least one item with status 'scored') in both runs;
-- a scorer skipped or failed throughout one of the runs has nothing to compare and gets no row.
-- mean_delta is the mean of per-item deltas (B - A) over items scored in both runs;
-- ci_low/ci_high is its 95% t interval (mean ± t(0.975, n-1) · sd / sqrt(n)), NULL below 2 pairs.
-- higher_is_better is run B's direction for the scorer (run_scorers; else run A's; else true). A lower-is-better
-- scorer (hallucination, bias, toxicity) improves when it falls: improved/regressed count paired items whose
-- delta is in the better/worse direction by more than 1e-9, unchanged those within.
CREATE OR REPLACE MACRO compare_runs(run_a, run_b) AS TABLE
WITH
    cells_a AS (SELECT item_id, scorer_id, status, score FROM scores WHERE run_id = run_a),
    cells_b AS (SELECT item_id, scorer_id, status, score FROM scores WHERE run_id = run_b),
    side_a AS (FROM run_scorer_side(run_a)),
    side_b AS (FROM run_scorer_side(run_b)),
    dir_a AS (SELECT scorer_id, bool_and(higher_is_better) AS hib FROM run_scorers WHERE run_id = run_a GROUP BY scorer_id),
    dir_b AS (SELECT scorer_id, bool_and(higher_is_better) AS hib FROM run_scorers WHERE run_id = run_b GROUP BY scorer_id),
    direction AS (
        SELECT sa.scorer_id, coalesce(db.hib, da.hib, true) AS higher_is_better,
               da.hib IS NOT NULL AND db.hib IS NOT NULL AND da.hib <> db.hib AS direction_differs
        FROM side_a AS sa
        LEFT JOIN dir_a AS da ON da.scorer_id = sa.scorer_id
        LEFT JOIN dir_b AS db ON db.scorer_id = sa.scorer_id),
    paired AS (
        SELECT a.scorer_id, b.score - a.score AS delta,
               CASE WHEN d.higher_is_better THEN b.score - a.score ELSE a.score - b.score END AS gain
        FROM cells_a AS a
        JOIN cells_b AS b ON a.scorer_id = b.scorer_id AND a.item_id = b.item_id
        JOIN direction AS d ON d.scorer_id = a.scorer_id
        WHERE a.status = 'scored' AND b.status = 'scored'),
    paired_stats AS (
        SELECT scorer_id,
               count(*) AS n_paired,
               avg(delta) AS mean_delta,
               stddev_samp(delta) AS sd_delta,
               count(*) FILTER (WHERE gain > 1e-9) AS n_improved,
               count(*) FILTER (WHERE gain < -1e-9) AS n_regressed,
               count(*) FILTER (WHERE abs(delta) <= 1e-9) AS n_unchanged
        FROM paired GROUP BY scorer_id),
    run_meta AS (
        SELECT (SELECT dataset_hash FROM runs WHERE run_id = run_a) AS hash_a,
               (SELECT dataset_hash FROM runs WHERE run_id = run_b) AS hash_b,
               (SELECT status FROM runs WHERE run_id = run_a) AS status_a,
               (SELECT status FROM runs WHERE run_id = run_b) AS status_b)
SELECT
    sa.scorer_id,
    d.higher_is_better,
    sa.mean_score AS mean_a,
    sb.mean_score AS mean_b,
    ps.mean_delta,
    ps.mean_delta - t975(ps.n_paired - 1) * ps.sd_delta / sqrt(ps.n_paired) AS ci_low,
    ps.mean_delta + t975(ps.n_paired - 1) * ps.sd_delta / sqrt(ps.n_paired) AS ci_high,
    coalesce(ps.n_paired, 0) AS n_paired,
    coalesce(ps.n_improved, 0) AS n_improved,
    coalesce(ps.n_regressed, 0) AS n_regressed,
    coalesce(ps.n_unchanged, 0) AS n_unchanged,
    sa.n_scored AS n_scored_a,
    sb.n_scored AS n_scored_b,
    sa.n_errors AS n_errors_a,
    sb.n_errors AS n_errors_b,
    nullif(concat_ws('; ',
        CASE WHEN m.hash_a IS DISTINCT FROM m.hash_b
             THEN 'dataset hash differs (' || coalesce(m.hash_a, 'none') || ' vs ' || coalesce(m.hash_b, 'none') || ')' END,
        CASE WHEN sa.scorer_version IS DISTINCT FROM sb.scorer_version
             THEN 'scorer version differs (' || coalesce(sa.scorer_version, 'none') || ' vs ' || coalesce(sb.scorer_version, 'none') || ')' END,
        CASE WHEN sa.judge_model IS DISTINCT FROM sb.judge_model
             THEN 'judge model differs (' || coalesce(sa.judge_model, 'none') || ' vs ' || coalesce(sb.judge_model, 'none') || ')' END,
        CASE WHEN d.direction_differs THEN 'direction differs (run B''s is used: '
             || CASE WHEN d.higher_is_better THEN 'higher' ELSE 'lower' END || ' is better)' END,
        CASE WHEN coalesce(ps.n_paired, 0) = 0 THEN 'no item scored in both runs'
             WHEN ps.n_paired = 1 THEN 'one paired item: no interval' END,
        CASE WHEN m.status_a IS DISTINCT FROM 'completed' THEN 'run A is ' || coalesce(m.status_a, 'unknown') END,
        CASE WHEN m.status_b IS DISTINCT FROM 'completed' THEN 'run B is ' || coalesce(m.status_b, 'unknown') END
    ), '') AS warning
FROM side_a AS sa
JOIN side_b AS sb ON sb.scorer_id = sa.scorer_id
JOIN direction AS d ON d.scorer_id = sa.scorer_id
LEFT JOIN paired_stats AS ps ON ps.scorer_id = sa.scorer_id
CROSS JOIN run_meta AS m
WHERE sa.n_scored > 0 AND sb.n_scored > 0
ORDER BY sa.scorer_id;

-- Per-item deltas (B - A) for one scorer, worst first (the largest drop, or for a lower-is-better scorer the
-- largest rise); items missing or unscored on a side come last. `gain` is the delta signed so that positive
-- is better (-delta for a lower-is-better scorer), the order's key.
CREATE OR REPLACE MACRO item_deltas(run_a, run_b, scorer) AS TABLE
SELECT
    coalesce(a.item_id, b.item_id) AS item_id,
    a.score AS score_a,
    b.score AS score_b,
    b.score - a.score AS delta,
    CASE WHEN scorer_higher_is_better(run_b, scorer) THEN b.score - a.score ELSE a.score - b.score END AS gain,
    a.status AS status_a,
    b.status AS status_b,
    a.reason AS reason_a,
    b.reason AS reason_b,
    coalesce(b.error, a.error) AS error,
    coalesce(ib.input, ia.input) AS input
FROM (SELECT * FROM scores WHERE run_id = run_a AND scorer_id = scorer) AS a
FULL OUTER JOIN (SELECT * FROM scores WHERE run_id = run_b AND scorer_id = scorer) AS b ON a.item_id = b.item_id
LEFT JOIN items AS ia ON ia.run_id = run_a AND ia.item_id = coalesce(a.item_id, b.item_id)
LEFT JOIN items AS ib ON ib.run_id = run_b AND ib.item_id = coalesce(a.item_id, b.item_id)
ORDER BY gain ASC NULLS LAST, item_id;
