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

-- Sweeps (docs/sweeps.md). A sweep reference as `evalduck leaderboard` resolves it (flows/store/sweeps.py):
-- 'latest' (the newest sweep), a sweep id, a name (its newest sweep), or an id prefix only one sweep has;
-- NULL when nothing matches, and every sweep macro below then returns no row.
CREATE OR REPLACE MACRO sweep_ref(ref) AS
    coalesce(
        (SELECT sweep_id FROM sweeps WHERE ref = 'latest' ORDER BY started_at DESC, sweep_id DESC LIMIT 1),
        (SELECT sweep_id FROM sweeps WHERE ref <> 'latest' AND sweep_id = ref LIMIT 1),
        (SELECT sweep_id FROM sweeps WHERE ref <> 'latest' AND name = ref
         ORDER BY started_at DESC, sweep_id DESC LIMIT 1),
        (SELECT min(sweep_id) FROM sweeps WHERE ref <> 'latest' AND starts_with(sweep_id, ref) HAVING count(*) = 1));

-- A sweep's cells, what its leaderboard is computed from: per candidate, scorer and item, the mean score over
-- the candidate's repeats (scored cells only: an item counts once however many of its runs scored it), and
-- how many scored cells that mean is over.
CREATE OR REPLACE MACRO sweep_cells(sweep) AS TABLE
SELECT r.candidate, s.scorer_id, s.item_id, avg(s.score) AS score, count(*) AS n_scored
FROM scores AS s
JOIN runs AS r ON r.run_id = s.run_id
WHERE r.sweep_id = sweep_ref(sweep) AND s.status = 'scored'
GROUP BY r.candidate, s.scorer_id, s.item_id;

-- A sweep's scorers and their direction: run_scorers of its runs (a scorer lower-is-better in any of them is
-- lower-is-better), and a scorer with scored cells that run_scorers does not list, as higher-is-better.
CREATE OR REPLACE MACRO sweep_scorers(sweep) AS TABLE
SELECT scorer_id, coalesce(bool_and(hib), true) AS higher_is_better
FROM (
    SELECT d.scorer_id, d.higher_is_better AS hib
    FROM run_scorers AS d JOIN runs AS r ON r.run_id = d.run_id
    WHERE r.sweep_id = sweep_ref(sweep)
    UNION ALL
    SELECT DISTINCT scorer_id, NULL AS hib FROM sweep_cells(sweep)
)
GROUP BY scorer_id;

-- Each candidate but the baseline against the baseline (sweeps.baseline), item by item: one row per candidate,
-- scorer and item both scored (sweep_cells). delta = score - baseline_score; gain = the delta signed so that
-- positive is better (-delta for a lower-is-better scorer); outcome 'tie' when |delta| <= 1e-9, else 'win'
-- (gain > 0) or 'loss'. Ordered by scorer and candidate, then worst first (lowest gain).
CREATE OR REPLACE MACRO sweep_pairs(sweep) AS TABLE
WITH
    sweep_row AS (SELECT baseline FROM sweeps WHERE sweep_id = sweep_ref(sweep) LIMIT 1),
    cells AS (FROM sweep_cells(sweep)),
    directions AS (FROM sweep_scorers(sweep)),
    paired AS (
        SELECT c.candidate, c.scorer_id, c.item_id, b.score AS baseline_score, c.score, c.score - b.score AS delta,
               CASE WHEN d.higher_is_better THEN c.score - b.score ELSE b.score - c.score END AS gain
        FROM cells AS c
        JOIN sweep_row AS w ON c.candidate <> w.baseline
        JOIN cells AS b ON b.candidate = w.baseline AND b.scorer_id = c.scorer_id AND b.item_id = c.item_id
        JOIN directions AS d ON d.scorer_id = c.scorer_id)
SELECT candidate, scorer_id, item_id, baseline_score, score, delta, gain,
       CASE WHEN abs(delta) <= 1e-9 THEN 'tie' WHEN gain > 0 THEN 'win' ELSE 'loss' END AS outcome
FROM paired
ORDER BY scorer_id, candidate, gain, item_id;

-- A sweep's leaderboard, one row per candidate (every label its runs carry) and scorer (sweep_scorers), the
-- figures of `evalduck leaderboard` (flows/report/leaderboard.py) but for Holm's adjustment:
-- n, mean, ci_low/ci_high: the candidate's cells (sweep_cells), their 95% t interval (NULL below 2 cells);
-- n_pairs, delta, delta_low/delta_high, wins/ties/losses: against the baseline over the items both scored
-- (sweep_pairs), delta oriented (the mean gain: positive is better), its UNADJUSTED 95% t interval (NULL
-- below 2 pairs); all NULL on the baseline's rows, n_pairs 0 and delta NULL with no item in common.
-- `evalduck leaderboard` draws the interval at Holm's level for the scorer's comparisons and gives p-values:
-- that needs Student's t CDF, which DuckDB lacks; with a single candidate besides the baseline the two agree.
-- judge_tokens, cost: over every cell of the candidate's runs; cost NULL when a judge request had no price.
-- rank: 1 = the best mean within the scorer (the lowest for a lower-is-better one), ties broken by the order
-- the candidates ran, as the leaderboard's; NULL with no scored cell.
CREATE OR REPLACE MACRO sweep_leaderboard(sweep) AS TABLE
WITH
    sweep_row AS (SELECT sweep_id, baseline FROM sweeps WHERE sweep_id = sweep_ref(sweep) LIMIT 1),
    candidates AS (
        SELECT r.candidate, min(r.started_at) AS first_started,
               CAST(coalesce(sum(s.prompt_tokens), 0) + coalesce(sum(s.completion_tokens), 0) AS BIGINT)
                   AS judge_tokens,
               CASE WHEN count(s.cost) = count(s.judge_model) THEN coalesce(sum(s.cost), 0) END AS cost
        FROM runs AS r
        LEFT JOIN scores AS s ON s.run_id = r.run_id
        WHERE r.sweep_id = (SELECT sweep_id FROM sweep_row)
        GROUP BY r.candidate),
    moments AS (
        SELECT candidate, scorer_id, count(*) AS n, avg(score) AS mean, stddev_samp(score) AS sd
        FROM sweep_cells(sweep) GROUP BY candidate, scorer_id),
    paired AS (
        SELECT candidate, scorer_id, count(*) AS n, avg(gain) AS gain, stddev_samp(gain) AS sd,
               count(*) FILTER (WHERE outcome = 'win') AS wins,
               count(*) FILTER (WHERE outcome = 'tie') AS ties,
               count(*) FILTER (WHERE outcome = 'loss') AS losses
        FROM sweep_pairs(sweep) GROUP BY candidate, scorer_id),
    board AS (
        SELECT c.candidate, d.scorer_id, c.candidate = w.baseline AS is_baseline, d.higher_is_better,
               coalesce(m.n, 0) AS n, m.mean,
               m.mean - t975(m.n - 1) * m.sd / sqrt(m.n) AS ci_low,
               m.mean + t975(m.n - 1) * m.sd / sqrt(m.n) AS ci_high,
               p.n AS n_pairs, p.gain AS delta,
               p.gain - t975(p.n - 1) * p.sd / sqrt(p.n) AS delta_low,
               p.gain + t975(p.n - 1) * p.sd / sqrt(p.n) AS delta_high,
               p.wins, p.ties, p.losses, c.judge_tokens, c.cost, c.first_started
        FROM candidates AS c
        CROSS JOIN sweep_scorers(sweep) AS d
        CROSS JOIN sweep_row AS w
        LEFT JOIN moments AS m ON m.candidate = c.candidate AND m.scorer_id = d.scorer_id
        LEFT JOIN paired AS p ON p.candidate = c.candidate AND p.scorer_id = d.scorer_id)
SELECT candidate, scorer_id, is_baseline, higher_is_better, n, mean, ci_low, ci_high,
       CASE WHEN NOT is_baseline THEN coalesce(n_pairs, 0) END AS n_pairs, delta, delta_low, delta_high,
       CASE WHEN NOT is_baseline THEN coalesce(wins, 0) END AS wins,
       CASE WHEN NOT is_baseline THEN coalesce(ties, 0) END AS ties,
       CASE WHEN NOT is_baseline THEN coalesce(losses, 0) END AS losses,
       judge_tokens, cost,
       CASE WHEN mean IS NOT NULL THEN row_number() OVER (
           PARTITION BY scorer_id
           ORDER BY CASE WHEN higher_is_better THEN -mean ELSE mean END NULLS LAST, first_started, candidate)
       END AS rank
FROM board
ORDER BY scorer_id, rank NULLS LAST, first_started, candidate;
