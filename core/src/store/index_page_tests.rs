//! Store tests of the index's pages against a real Redis (`index_page.rs`): walked page by page,
//! every query gives exactly the hits a full sort of the entries gives, in that order, whether
//! the newest hits are spread over the shards, crowded into one (its second pass), tied on their
//! score, thinned by a required term, or bounded by times of activity.

use super::index_id::shorten;
use super::search_index::shard_of;
use super::search_tests::query;
use super::tests::store;
use super::{IndexPosition, IndexTerm, Store};

/// A session id of the form Baton makes (32 hex digits), the `n`th of a test.
fn session_id(n: u64) -> String {
    format!("{:016x}{:016x}", n.wrapping_mul(0x9e37_79b9_7f4a_7c15), n)
}

/// Seeds `entries` (id, score, terms) and answers them as the index orders them: newest first,
/// then by member (the short id), descending.
async fn seeded(
    store: &Store,
    entries: Vec<(String, u64, Vec<IndexTerm>)>,
) -> Vec<(String, u64, Vec<IndexTerm>)> {
    for batch in entries.chunks(200) {
        store.seed_index(batch).await.unwrap();
    }
    let mut ordered = entries;
    ordered.sort_by_key(|(id, score, _)| std::cmp::Reverse((*score, shorten(id))));
    ordered
}

/// Every hit of `drive` holding `required`, walked in pages of `limit`.
pub(super) async fn walked(
    store: &Store,
    drive: &IndexTerm,
    required: &[IndexTerm],
    limit: usize,
) -> Vec<String> {
    walked_between(store, drive, required, limit, (None, None)).await
}

/// [`walked`], of the hits updated at or after and at or before `between`'s times.
async fn walked_between(
    store: &Store,
    drive: &IndexTerm,
    required: &[IndexTerm],
    limit: usize,
    (updated_after, updated_before): (Option<u64>, Option<u64>),
) -> Vec<String> {
    let mut hits = Vec::new();
    let mut next: Option<IndexPosition> = None;
    for _ in 0..10_000 {
        let mut page_query = query(drive.clone(), required.to_vec(), limit);
        page_query.updated_after = updated_after;
        page_query.updated_before = updated_before;
        page_query.after = next.clone();
        let page = store.search_index(&page_query).await.unwrap();
        assert!(page.hits.len() <= limit);
        hits.extend(page.hits.into_iter().map(|hit| hit.session_id));
        next = page.next;
        if next.is_none() {
            return hits;
        }
    }
    panic!("the pages did not end");
}

/// The ids of `ordered` that hold `drive` and every term of `required`.
fn expected(
    ordered: &[(String, u64, Vec<IndexTerm>)],
    drive: &IndexTerm,
    required: &[IndexTerm],
) -> Vec<String> {
    ordered
        .iter()
        .filter(|(_, _, terms)| {
            terms.contains(drive) && required.iter().all(|term| terms.contains(term))
        })
        .map(|(id, _, _)| id.clone())
        .collect()
}

#[tokio::test]
async fn pages_hold_every_hit_in_order_when_the_newest_crowd_into_one_shard() {
    let store = store().await;
    let agent = IndexTerm::Agent("crowd".into());
    // The 60 newest in shard 0 alone (a first pass asks each shard for a few), then 300 spread.
    let mut entries = Vec::new();
    let mut n = 0u64;
    while entries.len() < 60 {
        n += 1;
        let id = session_id(n);
        if shard_of(&id) == 0 {
            entries.push((id, 1_000_000 + n, vec![agent.clone()]));
        }
    }
    for k in 0..300u64 {
        entries.push((session_id(100_000 + k), 1_000 + k, vec![agent.clone()]));
    }
    let ordered = seeded(&store, entries).await;
    let all = expected(&ordered, &agent, &[]);
    assert_eq!(all.len(), 360);
    for limit in [1, 5, 20, 50, 100] {
        assert_eq!(
            walked(&store, &agent, &[], limit).await,
            all,
            "pages of {limit}"
        );
    }
    // The first page alone: the 20 newest, all of shard 0.
    let page = store.search_index(&query(agent, vec![], 20)).await.unwrap();
    let first: Vec<String> = page.hits.into_iter().map(|hit| hit.session_id).collect();
    assert_eq!(first, all[..20]);
    assert!(first.iter().all(|id| shard_of(id) == 0));
}

#[tokio::test]
async fn pages_hold_every_hit_in_order_with_ties_and_a_required_term() {
    let store = store().await;
    let (awaiting, agent) = (IndexTerm::Awaiting, IndexTerm::Agent("mixed".into()));
    let other = IndexTerm::Agent("other".into());
    // 600 entries on 40 distinct scores (ties across and within shards); a third of them
    // another agent's, a seventh not awaiting. A fixed pseudo-random sequence.
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut entries = Vec::new();
    for k in 0..600u64 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut terms = vec![if seed.is_multiple_of(3) {
            other.clone()
        } else {
            agent.clone()
        }];
        if !seed.is_multiple_of(7) {
            terms.push(awaiting.clone());
        }
        entries.push((session_id(k + 1), 5_000 + seed % 40, terms));
    }
    let ordered = seeded(&store, entries).await;
    // Between two times, and from one time on (the first page read from the top, stopping at
    // it: a few hits above it, then many below).
    for between in [
        (Some(5_010), Some(5_030)),
        (Some(5_037), None),
        (None, Some(5_012)),
    ] {
        let within: Vec<_> = ordered
            .iter()
            .filter(|(_, score, _)| {
                between.0.is_none_or(|after| *score >= after)
                    && between.1.is_none_or(|before| *score <= before)
            })
            .cloned()
            .collect();
        let all = expected(&within, &awaiting, std::slice::from_ref(&agent));
        assert!(all.len() > 10, "{between:?} holds {}", all.len());
        for limit in [1, 20, 64] {
            let paged = walked_between(
                &store,
                &awaiting,
                std::slice::from_ref(&agent),
                limit,
                between,
            )
            .await;
            assert_eq!(paged, all, "{between:?}, pages of {limit}");
        }
    }
    for (drive, required) in [
        (&awaiting, vec![agent.clone()]),
        (&agent, vec![awaiting.clone()]),
        (&awaiting, vec![]),
        (&other, vec![awaiting.clone()]),
    ] {
        let all = expected(&ordered, drive, &required);
        assert!(all.len() > 100, "{drive:?} holds {}", all.len());
        for limit in [1, 7, 20, 64] {
            assert_eq!(
                walked(&store, drive, &required, limit).await,
                all,
                "{drive:?} with {required:?}, pages of {limit}"
            );
        }
    }
}
