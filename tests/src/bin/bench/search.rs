//! The `search` section: the first page (20 rows) of two filtered searches over an index of N
//! sessions, for each N of `BENCH_SEARCH_SIZES` (default `1000,100000`): `status` alone (one
//! session in five) and `tag` with `status` (one in a hundred). The index
//! is seeded directly (`Store::seed_index`: entries without sessions behind them), so what is
//! timed is the index's part of a page (`Store::search_index`); reading the 20 rows back from
//! their sessions costs the same at every N. One tag in a hundred, one status in five.

use baton_core::store::{IndexQuery, IndexScope, IndexTerm, Status, Store};
use std::time::Instant;

const PAGE: usize = 20;
const QUERIES: usize = 200;
const SEED_BATCH: usize = 5_000;

fn terms_of(n: u64) -> Vec<IndexTerm> {
    let statuses = [
        Status::Active,
        Status::SuspendedClientTool,
        Status::Completed,
        Status::Failed,
        Status::Interrupted,
    ];
    vec![
        IndexTerm::Status(statuses[(n % 5) as usize]),
        IndexTerm::Agent("support".into()),
        IndexTerm::User(format!("user-{}", n % 10_000)),
        IndexTerm::Tag(format!("tag-{}", n % 100)),
    ]
}

/// Seeds the index of a store of its own up to `size` sessions (on top of what it holds).
async fn seed(store: &Store, from: u64, size: u64) -> anyhow::Result<()> {
    let mut n = from;
    while n < size {
        let batch: Vec<_> = (n..(n + SEED_BATCH as u64).min(size))
            .map(|i| (format!("s{i:08}"), 1_700_000_000_000 + i, terms_of(i)))
            .collect();
        n += batch.len() as u64;
        store.seed_index(&batch).await?;
    }
    Ok(())
}

/// Measures and prints the first page's time at each size.
pub async fn print_search() -> anyhow::Result<()> {
    let sizes: Vec<u64> = std::env::var("BENCH_SEARCH_SIZES")
        .unwrap_or_else(|_| "1000,100000".to_owned())
        .split(',')
        .filter_map(|size| size.trim().parse().ok())
        .collect();
    let prefix = baton_tests::unique("bench-search");
    let store = Store::connect(&baton_tests::redis_url(), prefix.clone()).await?;
    eprintln!("search: the first page of a filtered search, by indexed sessions");
    println!("| indexed sessions | filter | first page p50 (ms) | p99 (ms) | rows |");
    println!("|---:|---|---:|---:|---:|");
    let mut seeded = 0;
    for size in sizes {
        seed(&store, seeded, size).await?;
        seeded = size;
        let filters = [
            ("status", IndexTerm::Status(Status::Completed), vec![]),
            (
                "tag + status",
                IndexTerm::Tag("tag-7".into()),
                vec![IndexTerm::Status(Status::Completed)],
            ),
        ];
        for (name, drive, required) in filters {
            let query = IndexQuery {
                drive,
                required,
                scopes: vec![IndexScope::Roots],
                after: None,
                updated_before: None,
                updated_after: None,
                limit: PAGE,
            };
            let mut samples = Vec::with_capacity(QUERIES);
            let mut rows = 0;
            for _ in 0..QUERIES {
                let started = Instant::now();
                let page = store.search_index(&query).await?;
                samples.push(started.elapsed().as_secs_f64() * 1000.0);
                rows = page.hits.len();
            }
            let (p50, p99, _) = crate::summary(samples);
            println!("| {size} | {name} | {p50:.2} | {p99:.2} | {rows} |");
        }
    }
    println!();
    // The seeded keys are the benchmark's alone: drop them.
    let client = redis::Client::open(baton_tests::redis_url())?;
    let mut connection = client.get_multiplexed_async_connection().await?;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}:index:*"))
        .query_async(&mut connection)
        .await?;
    for chunk in keys.chunks(500) {
        let () = redis::cmd("UNLINK")
            .arg(chunk)
            .query_async(&mut connection)
            .await?;
    }
    Ok(())
}
