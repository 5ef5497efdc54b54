//! The timeline's bucket summaries: what a commit folds each new row into, and how a
//! read merges them into a point budget. Every series of a session's history (its
//! observations, calls, response-time samples and forgetting) is summarised by buckets
//! of [`BUCKET_ROWS`] consecutive rows, kept up to date by the commit that adds them
//! (`timeline_buckets`), so that reading a downsampled timeline costs about n / 64 rows
//! plus the rows it keeps, whatever the session's age. A read's point budget is lowered
//! until its answer fits a number of bytes ([`TimelineBudget`]).

use super::rows::Columns;
use super::{ForgetSpan, RegretGroup, StoreError};

/// Rows per bucket summary.
pub(crate) const BUCKET_ROWS: i64 = 64;

/// The most bytes of JSON one row of each series of a session's timeline answers (its
/// metadata aside), as the caller that knows the session's parameters counts them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RowBytes {
    /// An observation, with the forgetting span and the rolling-regret point it may
    /// bring.
    pub observation: i64,
    pub step: i64,
    pub sample: i64,
    pub ended_run: i64,
}

/// What a timeline read may return: at most `points` rows per series (observations,
/// steps, response-time samples, the newest ended runs), fewer where the rows, counted
/// at their largest ([`RowBytes`]), would not fit `max_bytes` with `fixed_bytes` and
/// the metadata. Metadata comes with the newest observations kept, as long as their
/// metadata adds up to at most `metadata_bytes`, and likewise with the ended runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimelineBudget {
    pub points: i64,
    pub max_bytes: i64,
    pub row_bytes: RowBytes,
    /// The answer's bytes beside its rows and their metadata.
    pub fixed_bytes: i64,
    pub metadata_bytes: i64,
}

/// How many rows of each series a session holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeriesCounts {
    pub observations: i64,
    pub steps: i64,
    pub samples: i64,
    pub ended_runs: i64,
}

impl TimelineBudget {
    /// `points` rows per series, every metadata, whatever their bytes.
    pub fn points(points: i64) -> TimelineBudget {
        TimelineBudget {
            points,
            max_bytes: i64::MAX,
            row_bytes: RowBytes::default(),
            fixed_bytes: 0,
            metadata_bytes: i64::MAX,
        }
    }

    /// The most bytes of the answer of a session of `counts` with `points` rows per
    /// series at most.
    pub fn bytes(&self, counts: &SeriesCounts, points: i64) -> i64 {
        let rows = |count: i64, bytes: i64| count.min(points).max(0).saturating_mul(bytes);
        let r = &self.row_bytes;
        [
            self.fixed_bytes,
            self.metadata_bytes.saturating_mul(2),
            rows(counts.observations, r.observation),
            rows(counts.steps, r.step),
            rows(counts.samples, r.sample),
            rows(counts.ended_runs, r.ended_run),
        ]
        .into_iter()
        .fold(0, i64::saturating_add)
    }

    /// The rows per series a read of a session of `counts` keeps: the largest number up
    /// to `points` whose answer fits `max_bytes` ([`Self::bytes`]); at least 1.
    pub fn points_within(&self, counts: &SeriesCounts) -> i64 {
        let fits = |points: i64| self.bytes(counts, points) <= self.max_bytes;
        let (mut fit, mut over) = (1, self.points.max(1) + 1);
        if fits(self.points) {
            return self.points.max(1);
        }
        // Binary search: `fits` holds at `fit` (or nothing fits) and fails at `over`.
        while over - fit > 1 {
            let mid = fit + (over - fit) / 2;
            if fits(mid) {
                fit = mid;
            } else {
                over = mid;
            }
        }
        fit
    }
}

/// One row folded into a bucket: its key, the value whose extremes are kept, and (for
/// observations) its regret and whether the client reported it.
pub(crate) struct BucketPoint {
    pub key: i64,
    pub value: f64,
    pub regret: Option<f64>,
    pub reported: bool,
}

impl BucketPoint {
    /// A row with a value and no regret.
    pub fn plain(key: i64, value: f64) -> BucketPoint {
        BucketPoint {
            key,
            value,
            regret: None,
            reported: false,
        }
    }
}

/// A stored bucket summary.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Bucket {
    pub series: String,
    pub first_key: i64,
    pub last_key: i64,
    pub count: i64,
    pub lo: f64,
    pub lo_key: i64,
    pub hi: f64,
    pub hi_key: i64,
    pub lo2: Option<f64>,
    pub lo2_key: Option<i64>,
    pub hi2: Option<f64>,
    pub hi2_key: Option<i64>,
    pub total: f64,
    pub n_valued: i64,
    pub n_reported: i64,
}

impl Bucket {
    /// The summary of `point` alone in `series`: what one row adds to its bucket.
    pub(crate) fn of(series: &str, point: &BucketPoint) -> Bucket {
        Bucket {
            series: series.to_owned(),
            first_key: point.key,
            last_key: point.key,
            count: 1,
            lo: point.value,
            lo_key: point.key,
            hi: point.value,
            hi_key: point.key,
            lo2: point.regret,
            lo2_key: point.regret.map(|_| point.key),
            hi2: point.regret,
            hi2_key: point.regret.map(|_| point.key),
            total: point.regret.unwrap_or(0.0),
            n_valued: i64::from(point.regret.is_some()),
            n_reported: i64::from(point.reported),
        }
    }

    /// Folds `later` (the rows after this summary's) in, as the commit's upsert
    /// (`commit.rs`, `MERGE_INTO_BUCKET`) folds a new summary into a stored one: ties
    /// keep the earlier row, and a missing regret never replaces one.
    pub(crate) fn fold(&mut self, later: &Bucket) {
        if later.first_key < self.first_key {
            self.first_key = later.first_key;
        }
        if later.last_key > self.last_key {
            self.last_key = later.last_key;
        }
        self.count += later.count;
        if later.lo < self.lo {
            (self.lo, self.lo_key) = (later.lo, later.lo_key);
        }
        if later.hi > self.hi {
            (self.hi, self.hi_key) = (later.hi, later.hi_key);
        }
        if self.lo2.is_none() || matches!((later.lo2, self.lo2), (Some(l), Some(s)) if l < s) {
            (self.lo2, self.lo2_key) = (later.lo2, later.lo2_key);
        }
        if self.hi2.is_none() || matches!((later.hi2, self.hi2), (Some(l), Some(s)) if l > s) {
            (self.hi2, self.hi2_key) = (later.hi2, later.hi2_key);
        }
        self.total += later.total;
        self.n_valued += later.n_valued;
        self.n_reported += later.n_reported;
    }
}

pub(crate) fn bucket_from_row(row: &impl Columns) -> Result<Bucket, StoreError> {
    Ok(Bucket {
        series: row.text("series")?.to_string(),
        first_key: row.int("first_key")?,
        last_key: row.int("last_key")?,
        count: row.int("count")?,
        lo: row.real("lo")?,
        lo_key: row.int("lo_key")?,
        hi: row.real("hi")?,
        hi_key: row.int("hi_key")?,
        lo2: row.opt_real("lo2")?,
        lo2_key: row.opt_int("lo2_key")?,
        hi2: row.opt_real("hi2")?,
        hi2_key: row.opt_int("hi2_key")?,
        total: row.real("total")?,
        n_valued: row.int("n_valued")?,
        n_reported: row.int("n_reported")?,
    })
}

/// How many consecutive buckets of a series (its buckets, in order) one downsampled
/// group merges: None when all its rows fit `budget`; else enough for at most
/// `budget / per_group` groups.
fn group_size(buckets: &[&Bucket], budget: i64, per_group: i64) -> Option<usize> {
    let rows: i64 = buckets.iter().map(|b| b.count).sum();
    if rows <= budget {
        return None;
    }
    let groups = (budget / per_group).max(1) as usize;
    Some(buckets.len().div_ceil(groups))
}

/// The keys of the rows a series (its buckets, in order) keeps within `budget`: None
/// when all its rows fit; else, merging consecutive buckets into at most
/// `budget / per_group` groups ([`group_size`]), each group's first and last row and the
/// first rows holding its minimum and maximum value and regret (at most `per_group` per
/// group).
pub(crate) fn kept_keys(buckets: &[&Bucket], budget: i64, per_group: i64) -> Option<Vec<i64>> {
    let size = group_size(buckets, budget, per_group)?;
    let mut keys = Vec::new();
    for group in buckets.chunks(size) {
        keys.push(group[0].first_key);
        keys.push(group[group.len() - 1].last_key);
        // Ties keep the earlier bucket: its row comes first.
        let lo = group
            .iter()
            .fold(group[0], |a, b| if b.lo < a.lo { b } else { a });
        let hi = group
            .iter()
            .fold(group[0], |a, b| if b.hi > a.hi { b } else { a });
        keys.extend([lo.lo_key, hi.hi_key]);
        let valued = group.iter().filter(|b| b.lo2.is_some());
        if let Some(lo2) = valued
            .clone()
            .reduce(|a, b| if b.lo2 < a.lo2 { b } else { a })
        {
            keys.extend(lo2.lo2_key);
        }
        if let Some(hi2) = valued.reduce(|a, b| if b.hi2 > a.hi2 { b } else { a }) {
            keys.extend(hi2.hi2_key);
        }
    }
    keys.sort_unstable();
    keys.dedup();
    Some(keys)
}

/// `kept` ([`kept_keys`] of a series whose keys run without gaps from its first bucket's
/// first key to its last bucket's last key, as observations' sequence numbers do) with
/// evenly spaced keys added, as many as `budget` leaves room for: a series a few times
/// over its budget then draws most of its rows, with every group's extremes among them,
/// not only the extremes. None (all rows) stays None.
pub(crate) fn with_evenly_spaced(
    kept: Option<Vec<i64>>,
    buckets: &[&Bucket],
    budget: i64,
) -> Option<Vec<i64>> {
    let mut keys = kept?;
    let (Some(first), Some(last)) = (buckets.first(), buckets.last()) else {
        return Some(keys);
    };
    let (first, last) = (first.first_key, last.last_key);
    let (span, spare) = (last - first + 1, budget - keys.len() as i64);
    if spare > 0 && span > 0 {
        // The i-th of `spare` evenly spaced positions, rounded down: distinct keys while
        // spare ≤ span (in i128: span × spare can pass i64 on a long series).
        let n = spare.min(span);
        keys.extend((0..n).map(|i| first + (i as i128 * span as i128 / n as i128) as i64));
        keys.sort_unstable();
        keys.dedup();
    }
    Some(keys)
}

/// The regrets of the observations' downsampled groups, the same groups as
/// [`kept_keys`] (so each group's last row is kept): empty when every observation fits
/// `budget`.
pub(crate) fn regret_groups(observed: &[&Bucket], budget: i64, per_group: i64) -> Vec<RegretGroup> {
    let Some(size) = group_size(observed, budget, per_group) else {
        return Vec::new();
    };
    observed
        .chunks(size)
        .map(|group| RegretGroup {
            last_seq: group[group.len() - 1].last_key,
            observations: group.iter().map(|b| b.count).sum(),
            regrets: group.iter().map(|b| b.n_valued).sum(),
            regret_sum: group.iter().map(|b| b.total).sum(),
        })
        .collect()
}

/// The first key of the newest buckets (in order) that together hold at least `regrets`
/// regrets, or the first bucket's when all of them hold fewer; None when none holds any.
pub(crate) fn newest_holding(buckets: &[&Bucket], regrets: i64) -> Option<i64> {
    let mut held = 0;
    let mut from = None;
    for bucket in buckets.iter().rev().filter(|b| b.n_valued > 0) {
        held += bucket.n_valued;
        from = Some(bucket.first_key);
        if held >= regrets {
            break;
        }
    }
    from
}

/// Forgetting as spans from the `f:<reason>` summaries (in bucket order): consecutive
/// buckets of one reason merged so that at most about `budget` spans come back; each
/// span's counts add up to the observations it forgot. In time order.
pub(crate) fn forget_spans(summaries: &[Bucket], budget: i64) -> Vec<ForgetSpan> {
    let forgetting: Vec<&Bucket> = summaries
        .iter()
        .filter(|b| b.series.starts_with("f:"))
        .collect();
    let size = forgetting.len().div_ceil(budget.max(1) as usize).max(1);
    let mut spans = Vec::new();
    for reason in forgetting.chunk_by(|a, b| a.series == b.series) {
        for group in reason.chunks(size) {
            spans.push(ForgetSpan {
                t: group.iter().map(|b| b.lo).fold(f64::INFINITY, f64::min),
                t_end: group.iter().map(|b| b.hi).fold(f64::NEG_INFINITY, f64::max),
                reason: group[0].series["f:".len()..].to_string(),
                count: group.iter().map(|b| b.count).sum(),
            });
        }
    }
    spans.sort_by(|a, b| a.t.total_cmp(&b.t).then_with(|| a.reason.cmp(&b.reason)));
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bucket summaries of `values` (key = index + 1), as commits would make them.
    fn summaries(values: &[f64]) -> Vec<Bucket> {
        values
            .chunks(BUCKET_ROWS as usize)
            .enumerate()
            .map(|(b, chunk)| {
                let key = |i: usize| (b * BUCKET_ROWS as usize + i + 1) as i64;
                let lo = (0..chunk.len()).fold(0, |a, i| if chunk[i] < chunk[a] { i } else { a });
                let hi = (0..chunk.len()).fold(0, |a, i| if chunk[i] > chunk[a] { i } else { a });
                Bucket {
                    series: "o".into(),
                    first_key: key(0),
                    last_key: key(chunk.len() - 1),
                    count: chunk.len() as i64,
                    lo: chunk[lo],
                    lo_key: key(lo),
                    hi: chunk[hi],
                    hi_key: key(hi),
                    lo2: None,
                    lo2_key: None,
                    hi2: None,
                    hi2_key: None,
                    total: 0.0,
                    n_valued: 0,
                    n_reported: 0,
                }
            })
            .collect()
    }

    #[test]
    fn merged_buckets_keep_every_spike_within_the_budget() {
        let values: Vec<f64> = (0..100_000)
            .map(|i| (i as f64 * 0.01).sin() + if i % 9973 == 0 { 50.0 } else { 0.0 })
            .collect();
        let buckets = summaries(&values);
        let refs: Vec<&Bucket> = buckets.iter().collect();
        let keys = kept_keys(&refs, 2000, 6).expect("over the budget");
        assert!(keys.len() <= 2000, "{}", keys.len());
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        assert_eq!((keys[0], *keys.last().unwrap()), (1, 100_000));
        // Brute force: every spike's key is kept, and so is the global minimum's.
        for (i, v) in values.iter().enumerate() {
            if *v > 10.0 {
                assert!(keys.contains(&(i as i64 + 1)), "spike at {i}");
            }
        }
        let min = (0..values.len()).fold(0, |a, i| if values[i] < values[a] { i } else { a });
        assert!(keys.contains(&(min as i64 + 1)));
        assert_eq!(kept_keys(&refs, 200_000, 6), None, "all rows fit");
    }

    #[test]
    fn a_series_a_few_times_its_budget_draws_most_rows_and_every_extreme() {
        for rows in [3_200usize, 2_001, 10_000, 100_000] {
            let values: Vec<f64> = (0..rows)
                .map(|i| (i as f64 * 0.37).sin() + if i % 997 == 5 { 9.0 } else { 0.0 })
                .collect();
            let buckets = summaries(&values);
            let refs: Vec<&Bucket> = buckets.iter().collect();
            let extremes = kept_keys(&refs, 2000, 6).expect("over the budget");
            let keys = with_evenly_spaced(Some(extremes.clone()), &refs, 2000).unwrap();
            assert!(keys.len() <= 2000, "{rows}: {}", keys.len());
            assert!(keys.windows(2).all(|w| w[0] < w[1]));
            assert!(
                extremes.iter().all(|k| keys.binary_search(k).is_ok()),
                "{rows}"
            );
            assert!(
                keys.iter().all(|&k| (1..=rows as i64).contains(&k)),
                "{rows}"
            );
            // At least three quarters of the budget, or of the rows when fewer.
            assert!(
                4 * keys.len() >= 3 * 2000.min(rows),
                "{rows}: {}",
                keys.len()
            );
        }
        assert_eq!(with_evenly_spaced(None, &[], 2000), None, "all rows fit");
    }

    #[test]
    fn the_newest_regrets_are_read_from_the_buckets_that_hold_them() {
        let bucket = |first_key: i64, n_valued: i64| Bucket {
            first_key,
            n_valued,
            ..summaries(&[0.0])[0].clone()
        };
        let all = [
            bucket(1, 64),
            bucket(65, 0),
            bucket(129, 64),
            bucket(193, 10),
        ];
        let refs: Vec<&Bucket> = all.iter().collect();
        assert_eq!(
            newest_holding(&refs, 128),
            Some(1),
            "64 + 64 + 10 ≥ 128 from seq 1"
        );
        assert_eq!(newest_holding(&refs, 70), Some(129));
        assert_eq!(newest_holding(&refs, 5), Some(193));
        let none = [bucket(1, 0), bucket(65, 0)];
        assert_eq!(newest_holding(&none.iter().collect::<Vec<_>>(), 128), None);
    }

    #[test]
    fn the_points_kept_are_the_most_whose_answer_fits() {
        let budget = TimelineBudget {
            points: 20_000,
            max_bytes: 1_000_000,
            row_bytes: RowBytes {
                observation: 100,
                step: 200,
                sample: 10,
                ended_run: 1000,
            },
            fixed_bytes: 1000,
            metadata_bytes: 100_000,
        };
        let counts = |observations, steps, ended_runs| SeriesCounts {
            observations,
            steps,
            samples: steps,
            ended_runs,
        };
        let small = counts(100, 200, 0);
        assert_eq!(budget.points_within(&small), 20_000, "all of it fits");
        let long = counts(50_000, 100_000, 0);
        let points = budget.points_within(&long);
        assert!(budget.bytes(&long, points) <= 1_000_000);
        assert!(budget.bytes(&long, points + 1) > 1_000_000);
        assert_eq!(points, (1_000_000 - 1000 - 200_000) / 310);
        // Ended runs take their share only as far as the session has them.
        let failing = counts(50_000, 100_000, 100);
        assert_eq!(budget.points_within(&failing), (799_000 - 100_000) / 310);
        let nothing_fits = TimelineBudget {
            max_bytes: 10,
            ..budget
        };
        assert_eq!(nothing_fits.points_within(&long), 1);
        let unbounded = TimelineBudget::points(300);
        assert_eq!(unbounded.points_within(&long), 300);
    }

    #[test]
    fn forget_spans_add_up_and_fit_the_budget() {
        let bucket = |reason: &str, t: f64, count: i64| Bucket {
            series: format!("f:{reason}"),
            count,
            lo: t,
            hi: t + 1.0,
            ..summaries(&[0.0])[0].clone()
        };
        let mut all: Vec<Bucket> = (0..100)
            .map(|i| bucket("budget", i as f64 * 10.0, 3))
            .collect();
        all.extend((0..50).map(|i| bucket("reset", i as f64 * 20.0, 1)));
        let spans = forget_spans(&all, 30);
        assert!(spans.len() <= 32, "{}", spans.len());
        assert_eq!(spans.iter().map(|s| s.count).sum::<i64>(), 350);
        assert!(spans.windows(2).all(|w| w[0].t <= w[1].t));
        assert!(spans.iter().all(|s| s.t < s.t_end));
        assert_eq!(forget_spans(&all, 10_000).len(), 150, "one span per bucket");
    }

    /// Folding rows one by one, or in groups whose summaries are then folded (a batch's
    /// commit folds a change's rows before the upsert folds them into the stored
    /// summary), gives the summary written out from its rows: the first row holding each
    /// extreme, regrets only where present.
    #[test]
    fn folded_summaries_are_the_summary_of_their_rows() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for _ in 0..500 {
            let n = rng.random_range(1..20);
            // Few distinct values, so that extremes tie.
            let points: Vec<BucketPoint> = (0..n)
                .map(|i| BucketPoint {
                    key: 10 + i,
                    value: f64::from(rng.random_range(0..4)),
                    regret: rng
                        .random_bool(0.6)
                        .then(|| f64::from(rng.random_range(0..3))),
                    reported: rng.random_bool(0.5),
                })
                .collect();
            let first = |better: &dyn Fn(f64, f64) -> bool,
                         of: &dyn Fn(&BucketPoint) -> Option<f64>| {
                points
                    .iter()
                    .filter_map(|p| of(p).map(|v| (v, p.key)))
                    .fold(None, |best: Option<(f64, i64)>, (v, k)| match best {
                        Some((b, _)) if !better(v, b) => best,
                        _ => Some((v, k)),
                    })
            };
            let (lo, lo_key) = first(&|a, b| a < b, &|p| Some(p.value)).unwrap();
            let (hi, hi_key) = first(&|a, b| a > b, &|p| Some(p.value)).unwrap();
            let lo2 = first(&|a, b| a < b, &|p| p.regret);
            let hi2 = first(&|a, b| a > b, &|p| p.regret);
            let expected = Bucket {
                series: "o".into(),
                first_key: 10,
                last_key: 9 + n,
                count: n,
                lo,
                lo_key,
                hi,
                hi_key,
                lo2: lo2.map(|(v, _)| v),
                lo2_key: lo2.map(|(_, k)| k),
                hi2: hi2.map(|(v, _)| v),
                hi2_key: hi2.map(|(_, k)| k),
                total: points.iter().filter_map(|p| p.regret).sum(),
                n_valued: points.iter().filter(|p| p.regret.is_some()).count() as i64,
                n_reported: points.iter().filter(|p| p.reported).count() as i64,
            };
            let fold = |rows: &[BucketPoint]| {
                let mut summary = Bucket::of("o", &rows[0]);
                for point in &rows[1..] {
                    summary.fold(&Bucket::of("o", point));
                }
                summary
            };
            assert_eq!(fold(&points), expected);
            let cut = rng.random_range(1..=points.len());
            let mut grouped = fold(&points[..cut]);
            if cut < points.len() {
                grouped.fold(&fold(&points[cut..]));
            }
            assert_eq!(grouped, expected);
        }
    }
}
