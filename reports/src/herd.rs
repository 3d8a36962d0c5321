//! The herd effect, measured and drawn: how many waiters each release woke, against how many
//! were waiting.
//!
//! A *release* here is any transaction whose watch events woke a client waiting under the
//! lock's directory (a holder's delete, or a session's expiry deleting its node); see
//! `zkh_model::properties::wakeups` for who counts as waiting. A herd-free lock wakes one
//! waiter per release however many wait (the line stays at 1); the `herd` variant wakes them
//! all (the line climbs with the waiters). [`Herd`] sums a run, and merges runs for a sweep;
//! [`chart`] draws one series per scenario as a small SVG.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use zkh_model::properties::Wakeup;

use crate::timeline::escape;

/// The releases that found `waiting` clients waiting.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HerdBucket {
    /// Clients waiting when the release came.
    pub waiting: u64,
    /// Releases that found that many.
    pub releases: u64,
    /// Clients they woke, in all.
    pub woken_total: u64,
    /// The most one of them woke.
    pub woken_max: u64,
}

/// Wakeups per release over a run or a sweep.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Herd {
    /// Releases that woke a waiter.
    pub releases: u64,
    /// Waiters woken, in all.
    pub woken_total: u64,
    /// Waiters woken per release, on average.
    pub woken_mean: f64,
    /// The most waiters one release woke.
    pub woken_max: u64,
    /// The same, by the number of clients waiting.
    pub by_waiting: Vec<HerdBucket>,
}

impl Herd {
    /// The herd figures of one run's wakeups.
    pub fn of(wakeups: &[Wakeup]) -> Herd {
        let mut buckets: BTreeMap<u64, HerdBucket> = BTreeMap::new();
        for wakeup in wakeups {
            let (waiting, woken) = (wakeup.waiting as u64, wakeup.woken as u64);
            let bucket = buckets.entry(waiting).or_insert(HerdBucket {
                waiting,
                releases: 0,
                woken_total: 0,
                woken_max: 0,
            });
            bucket.releases += 1;
            bucket.woken_total += woken;
            bucket.woken_max = bucket.woken_max.max(woken);
        }
        Herd::from_buckets(buckets)
    }

    fn from_buckets(buckets: BTreeMap<u64, HerdBucket>) -> Herd {
        let releases = buckets.values().map(|b| b.releases).sum();
        let woken_total = buckets.values().map(|b| b.woken_total).sum();
        Herd {
            releases,
            woken_total,
            woken_mean: if releases == 0 {
                0.0
            } else {
                woken_total as f64 / releases as f64
            },
            woken_max: buckets.values().map(|b| b.woken_max).max().unwrap_or(0),
            by_waiting: buckets.into_values().collect(),
        }
    }

    /// This and `other` together (a sweep's seeds).
    pub fn merge(&self, other: &Herd) -> Herd {
        let mut buckets: BTreeMap<u64, HerdBucket> = BTreeMap::new();
        for bucket in self.by_waiting.iter().chain(&other.by_waiting) {
            let merged = buckets.entry(bucket.waiting).or_insert(HerdBucket {
                waiting: bucket.waiting,
                releases: 0,
                woken_total: 0,
                woken_max: 0,
            });
            merged.releases += bucket.releases;
            merged.woken_total += bucket.woken_total;
            merged.woken_max = merged.woken_max.max(bucket.woken_max);
        }
        Herd::from_buckets(buckets)
    }
}

const COLOURS: [&str; 12] = [
    "#31a354", "#d7191c", "#3182bd", "#e6550d", "#756bb1", "#636363", "#e7298a", "#66a61e",
    "#1b9e77", "#a6761d", "#7570b3", "#17becf",
];

/// An SVG chart of waiters woken per release (mean, with the maximum as a thin bar) against
/// clients waiting, one series per `(name, herd)`, with the herd-free line at 1.
pub fn chart(series: &[(&str, &Herd)]) -> String {
    let (width, left, bottom, top, right) = (460.0, 44.0, 36.0, 14.0, 150.0);
    let plot_h = 210.0;
    // The legend takes 30 px a series: a sweep of the whole catalogue has a dozen locks.
    let height = f64::max(
        top + plot_h + bottom,
        top + 8.0 + series.len() as f64 * 30.0,
    );
    let max_waiting = series
        .iter()
        .flat_map(|(_, h)| h.by_waiting.iter().map(|b| b.waiting))
        .max()
        .unwrap_or(1)
        .max(2);
    let max_woken = series
        .iter()
        .map(|(_, h)| h.woken_max)
        .max()
        .unwrap_or(1)
        .max(max_waiting)
        .max(2);
    let plot_w = width - left - right;
    let x = |waiting: f64| left + waiting / max_waiting as f64 * plot_w;
    let y = |woken: f64| top + plot_h - woken / max_woken as f64 * plot_h;
    let mut svg = String::new();
    let _ = write!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"herd-chart\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\" font-size=\"11\">\
         <rect x=\"0\" y=\"0\" width=\"{width}\" height=\"{height}\" fill=\"#fff\"/>"
    );
    for tick in 0..=max_woken {
        if max_woken > 10 && tick % 2 == 1 {
            continue;
        }
        let _ = write!(
            svg,
            "<line x1=\"{left}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#eee\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#666\">{tick}</text>",
            left + plot_w,
            left - 4.0,
            y(tick as f64) + 4.0,
            y = y(tick as f64),
        );
    }
    for tick in 0..=max_waiting {
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\" fill=\"#666\">{tick}</text>",
            x(tick as f64),
            top + plot_h + 14.0
        );
    }
    let _ = write!(
        svg,
        "<line x1=\"{left}\" x2=\"{}\" y1=\"{top}\" y2=\"{top}\" stroke=\"none\"/>\
         <line x1=\"{left}\" x2=\"{left}\" y1=\"{top}\" y2=\"{}\" stroke=\"#999\"/>\
         <line x1=\"{left}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"#999\"/>\
         <line x1=\"{left}\" x2=\"{}\" y1=\"{y1:.1}\" y2=\"{y1:.1}\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#333\">clients waiting when the release came</text>\
         <text x=\"12\" y=\"{}\" text-anchor=\"middle\" fill=\"#333\" transform=\"rotate(-90 12 {})\">waiters woken</text>",
        left + plot_w,
        top + plot_h,
        left + plot_w,
        top + plot_h,
        top + plot_h,
        left + plot_w,
        left + plot_w / 2.0,
        top + plot_h + 30.0,
        top + plot_h / 2.0,
        top + plot_h / 2.0,
        y1 = y(1.0),
    );
    for (index, (name, herd)) in series.iter().enumerate() {
        let colour = COLOURS[index % COLOURS.len()];
        let points: Vec<String> = herd
            .by_waiting
            .iter()
            .map(|b| {
                format!(
                    "{:.1},{:.1}",
                    x(b.waiting as f64),
                    y(b.woken_total as f64 / b.releases.max(1) as f64)
                )
            })
            .collect();
        let _ = write!(
            svg,
            "<g class=\"herd-series\" data-series=\"{}\"><polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"/>",
            escape(name),
            points.join(" ")
        );
        for bucket in &herd.by_waiting {
            let mean = bucket.woken_total as f64 / bucket.releases.max(1) as f64;
            let _ = write!(
                svg,
                "<line x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"{colour}\" stroke-width=\"1\"/>\
                 <circle cx=\"{cx:.1}\" cy=\"{:.1}\" r=\"3.5\" fill=\"{colour}\"><title>{}: {} releases with {} waiting woke {mean:.2} on average, at most {}</title></circle>",
                y(mean),
                y(bucket.woken_max as f64),
                y(mean),
                escape(name),
                bucket.releases,
                bucket.waiting,
                bucket.woken_max,
                cx = x(bucket.waiting as f64),
            );
        }
        let legend_y = top + 12.0 + index as f64 * 30.0;
        let _ = write!(
            svg,
            "<rect x=\"{}\" y=\"{:.1}\" width=\"12\" height=\"12\" fill=\"{colour}\"/><text x=\"{}\" y=\"{:.1}\" fill=\"#333\">{}</text><text x=\"{}\" y=\"{:.1}\" fill=\"#666\">mean {:.2}, max {}</text></g>",
            left + plot_w + 14.0,
            legend_y - 10.0,
            left + plot_w + 30.0,
            legend_y,
            escape(name),
            left + plot_w + 30.0,
            legend_y + 13.0,
            herd.woken_mean,
            herd.woken_max
        );
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wakeup(waiting: usize, woken: usize) -> Wakeup {
        Wakeup {
            zxid: 0,
            waiting,
            woken,
        }
    }

    #[test]
    fn a_herd_climbs_with_the_waiters_and_a_fair_lock_stays_at_one() {
        let fair = Herd::of(&[wakeup(1, 1), wakeup(3, 1), wakeup(3, 1)]);
        let herd = Herd::of(&[wakeup(2, 2), wakeup(3, 3)]);
        assert_eq!(
            (fair.releases, fair.woken_mean, fair.woken_max),
            (3, 1.0, 1)
        );
        assert_eq!(
            (herd.releases, herd.woken_mean, herd.woken_max),
            (2, 2.5, 3)
        );
        let both = fair.merge(&herd);
        assert_eq!((both.releases, both.woken_total, both.woken_max), (5, 8, 3));
        let three = both
            .by_waiting
            .iter()
            .find(|b| b.waiting == 3)
            .expect("bucket 3");
        assert_eq!((three.releases, three.woken_total), (3, 5));
        let svg = chart(&[("lock <correct>", &fair), ("herd", &herd)]);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(svg.matches("class=\"herd-series\"").count(), 2);
        assert!(svg.contains("lock &lt;correct&gt;"), "names are escaped");
    }
}
