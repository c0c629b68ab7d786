//! The sampler's statistics: intervals are exponential with mean `rate`, and Go's
//! unbiasing formula recovers exact totals from the samples.
#![cfg(feature = "std")]

use proptest::prelude::*;
use sampler_core::sampler::IntervalRng;
use sampler_core::{NoStack, Profiler, Recorded};

const DRAWS: usize = 1_000_000;

/// Kolmogorov–Smirnov statistic of `xs` (sorted in place) against the CDF of
/// `floor(E·rate) + 1`, `E ~ Exp(1)`, which at integer `x` is `1 - exp(-x/rate)`.
fn ks_exponential(xs: &mut [f64], rate: f64) -> f64 {
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = xs.len() as f64;
    let mut d: f64 = 0.0;
    let mut i = 0;
    while i < xs.len() {
        // Handle ties: the empirical CDF jumps once per distinct value.
        let v = xs[i];
        let mut j = i;
        while j < xs.len() && xs[j] == v {
            j += 1;
        }
        let f = 1.0 - (-v / rate).exp();
        let below = i as f64 / n; // empirical CDF just below v
        let at = j as f64 / n;
        // Just below v the model CDF is that of v-1 (integer support).
        let f_below = 1.0 - (-(v - 1.0) / rate).exp();
        d = d.max((at - f).abs()).max((below - f_below).abs());
        i = j;
    }
    d
}

fn draws(seed: u64, rate: usize) -> Vec<f64> {
    let mut rng = IntervalRng::new(seed);
    (0..DRAWS).map(|_| rng.next_interval(rate) as f64).collect()
}

/// Critical value of the KS statistic at α = 0.001 for n samples (1.95/√n).
fn ks_critical(n: usize) -> f64 {
    1.949 / (n as f64).sqrt()
}

#[test]
fn a_million_intervals_have_mean_rate_and_pass_kolmogorov_smirnov() {
    for (seed, rate) in [(1u64, 512 * 1024usize), (2, 4096), (3, 100)] {
        let mut xs = draws(seed, rate);
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        // floor(E·r) + 1 has mean r + 1/2 (to within 1/12r).
        let rel = (mean - rate as f64).abs() / rate as f64;
        assert!(
            rel < 0.01,
            "rate {rate}: mean {mean:.1} is {:.3}% off",
            rel * 100.0
        );
        let d = ks_exponential(&mut xs, rate as f64);
        assert!(
            d < ks_critical(DRAWS),
            "rate {rate}: KS D = {d:.5} ≥ {:.5}",
            ks_critical(DRAWS)
        );
    }
}

#[test]
fn the_goodness_of_fit_test_rejects_a_wrong_distribution() {
    // Guard against a vacuous KS: the same draws judged against a mean 2% off fail.
    let mut xs = draws(4, 4096);
    let d = ks_exponential(&mut xs, 4096.0 * 1.02);
    assert!(
        d > ks_critical(DRAWS),
        "KS could not tell a 2% wrong mean (D = {d:.5})"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]
    /// Any seed, any rate: a million draws average to `rate` within 1%. (Intervals are
    /// whole bytes, `floor(E·rate) + 1`, whose mean is `rate + 1/2`: below a rate of 100
    /// that half byte alone is more than 0.5%.)
    #[test]
    fn interval_mean_is_the_rate_for_any_seed(seed in any::<u64>(), rate in 100usize..4_000_000) {
        let xs = draws(seed, rate);
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        prop_assert!((mean - rate as f64).abs() / (rate as f64) < 0.01, "mean {} rate {}", mean, rate);
    }
}

/// Go's per-bucket unsampling: every sampled object of size `s` stands for
/// `1 / (1 - exp(-s/rate))` objects.
fn scale(size: u64, rate: u64) -> f64 {
    1.0 / (1.0 - (-(size as f64) / rate as f64).exp())
}

#[test]
fn unsampled_estimates_are_within_3_percent_of_exact_totals() {
    const RATE: usize = 2048;
    // A mixed workload: many small objects, some medium, a few large (larger than the
    // rate: sampled almost always, scale ≈ 1).
    let sizes: [(usize, usize); 5] = [
        (16, 400_000),
        (48, 200_000),
        (256, 40_000),
        (1500, 8_000),
        (20_000, 600),
    ];
    let prof = Profiler::<16, 64, 16, 1024>::new(RATE, 0xC0FFEE);
    let (mut exact_objects, mut exact_bytes) = (0u64, 0u64);
    let mut addr = 0x1000usize;
    // Interleave sizes deterministically so no size sees a special phase of the countdown.
    let mut left: Vec<usize> = sizes.iter().map(|s| s.1).collect();
    while left.iter().any(|&n| n > 0) {
        for (i, &(size, _)) in sizes.iter().enumerate() {
            if left[i] > 0 {
                left[i] -= 1;
                addr += 64;
                if prof.record_alloc(addr as *const u8, size, &NoStack) == Recorded::Sampled {
                    prof.record_free(addr as *const u8, size);
                }
                exact_objects += 1;
                exact_bytes += size as u64;
            }
        }
    }
    prof.advance_cycle();
    let bytes = prof.snapshot_vec(&[], false).unwrap();
    let snap = sampler_core::snapshot::decode(&bytes).unwrap();
    let c = snap.counters;
    assert_eq!(
        (c.stack_table_full, c.bucket_table_full, c.live_map_full),
        (0, 0, 0)
    );
    assert!(c.samples >= 10_000, "only {} samples", c.samples);
    let est_objects: f64 = snap
        .buckets
        .iter()
        .map(|b| b.active.allocs as f64 * scale(b.size, RATE as u64))
        .sum();
    let est_bytes: f64 = snap
        .buckets
        .iter()
        .map(|b| b.active.alloc_bytes as f64 * scale(b.size, RATE as u64))
        .sum();
    let err_o = (est_objects - exact_objects as f64).abs() / exact_objects as f64;
    let err_b = (est_bytes - exact_bytes as f64).abs() / exact_bytes as f64;
    assert!(
        err_b < 0.03,
        "bytes: estimate {est_bytes:.0} vs exact {exact_bytes} ({:.2}%)",
        err_b * 100.0
    );
    assert!(
        err_o < 0.03,
        "objects: estimate {est_objects:.0} vs exact {exact_objects} ({:.2}%)",
        err_o * 100.0
    );
    // And per size class with enough samples.
    for b in &snap.buckets {
        let exact = sizes.iter().find(|s| s.0 as u64 == b.size).unwrap().1 as f64;
        if b.active.allocs >= 2_000 {
            let est = b.active.allocs as f64 * scale(b.size, RATE as u64);
            assert!(
                (est - exact).abs() / exact < 0.05,
                "size {}: {est:.0} vs {exact}",
                b.size
            );
        }
    }
}
