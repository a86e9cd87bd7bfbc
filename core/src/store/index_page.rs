//! A page of the search index (`GET /sessions`, `GET /pending`): each source (a scope's drive
//! term in one shard, `index_page.lua`) gives its hits below the position, and the page is
//! their merge, newest first.
//!
//! A page of `limit` rows over many sources holds only a few rows of each, so the first pass asks
//! every source for a few (its fair share and a margin), then a second asks again, for a whole
//! page, only the sources that stopped above the page's last row: the rows they did not read yet
//! could still belong on it. A source that stopped below it cannot add a row. So the page holds
//! what one pass of `limit` per source would, reading a fraction of it: at 16 shards and 20
//! rows, 6 a source, and a second round trip for about one page in sixty.

use super::{
    Error, IndexQuery, IndexScope, IndexTerm, Store,
    index_id::{expand, shorten},
    index_record::code_of,
    search_index::{INDEX_SHARDS, IndexPage, IndexPosition, STATUSES, parse_score},
};
use std::sync::LazyLock;

pub(super) static INDEX_PAGE: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("index_page.lua")));

/// Rows asked of each source in the first pass beyond its fair share of the page.
const FIRST_PASS_MARGIN: usize = 4;

/// One source of a page: a drive term's sorted set in one shard and what its hits must hold.
struct Source<'a> {
    drive_key: String,
    records_key: String,
    /// The required terms' key names in the source's scope.
    required: &'a [String],
}

/// Where a source's read starts: a score (inclusive, or `+inf`) and, at that score, the (short)
/// id its members must be below (empty: none).
struct Cursor {
    max_score: String,
    after_id: String,
}

/// What one source gave: its hits, newest first, and where it stopped (`None`: it has no more).
struct SourcePage {
    hits: Vec<IndexPosition>,
    frontier: Option<IndexPosition>,
}

impl Store {
    /// One page of the index: each source's hits below the position, merged; a source that
    /// stopped early (its share full, or its read budget spent) bounds the page, so no hit is
    /// skipped. The `All` drive reads each status's sets as sources of their own, merged the
    /// same way. Hits are merged in the order Redis keeps them (their short ids), then named by
    /// full id. See the module's note for the two passes.
    pub async fn search_index(&self, query: &IndexQuery) -> Result<IndexPage, Error> {
        let limit = query.limit.max(1);
        let budget = (limit * 10).max(200);
        let start = start_of(query);
        let min_score = query
            .updated_after
            .map_or_else(|| "-inf".to_owned(), |after| after.to_string());
        let drives: Vec<String> = match &query.drive {
            IndexTerm::All => STATUSES
                .iter()
                .map(|status| IndexTerm::Status(*status).text())
                .collect(),
            drive => vec![drive.text()],
        };
        let codes: Vec<String> = query
            .required
            .iter()
            .map(|term| code_of(&term.text()))
            .collect();
        let required: Vec<(IndexScope, Vec<String>)> = query
            .scopes
            .iter()
            .map(|scope| {
                let names = query
                    .required
                    .iter()
                    .map(|term| format!("{}:{}", scope.name(), term.text()))
                    .collect();
                (*scope, names)
            })
            .collect();
        let sources: Vec<Source> = required
            .iter()
            .flat_map(|(scope, names)| {
                drives.iter().flat_map(move |drive| {
                    (0..INDEX_SHARDS).map(move |shard| Source {
                        drive_key: self.index_key(shard, &format!("{}:{drive}", scope.name())),
                        records_key: self.index_key(shard, "records"),
                        required: names,
                    })
                })
            })
            .collect();
        let read = |source: &Source, from: Cursor, rows: usize| {
            let mut invocation = INDEX_PAGE.prepare_invoke();
            invocation
                .key(&source.drive_key)
                .key(&source.records_key)
                .arg(from.max_score)
                .arg(from.after_id)
                .arg(&min_score)
                .arg(rows)
                .arg(budget)
                .arg(source.required.len());
            for term in source.required.iter().chain(&codes) {
                invocation.arg(term);
            }
            let mut connection = self.conn();
            async move {
                let reply: Vec<String> = invocation.invoke_async(&mut connection).await?;
                Ok::<_, Error>(source_page(reply))
            }
        };

        let share = limit.div_ceil(sources.len().max(1)) + FIRST_PASS_MARGIN;
        let first_rows = limit.min(share);
        let mut pages = futures::future::try_join_all(sources.iter().map(|source| {
            let from = Cursor {
                max_score: start.max_score.clone(),
                after_id: start.after_id.clone(),
            };
            read(source, from, first_rows)
        }))
        .await?;
        if first_rows < limit {
            // The sources that stopped above the page's last row so far read on, a page's worth.
            let last = page_last(&pages, limit);
            let again: Vec<(usize, Cursor)> = pages
                .iter()
                .enumerate()
                .filter_map(|(index, page)| {
                    let frontier = page.frontier.as_ref()?;
                    last.as_ref().is_none_or(|last| frontier > last).then(|| {
                        let from = Cursor {
                            max_score: frontier.score.to_string(),
                            after_id: frontier.session_id.clone(),
                        };
                        (index, from)
                    })
                })
                .collect();
            let indexes: Vec<usize> = again.iter().map(|(index, _)| *index).collect();
            let more = futures::future::try_join_all(
                again
                    .into_iter()
                    .map(|(index, from)| read(&sources[index], from, limit)),
            )
            .await?;
            for (index, more) in indexes.into_iter().zip(more) {
                let page = &mut pages[index];
                page.hits.extend(more.hits);
                page.frontier = more.frontier;
            }
        }
        Ok(merged(pages, limit))
    }
}

/// Where a query's read starts: below its cursor, at or before its `updated_before`.
fn start_of(query: &IndexQuery) -> Cursor {
    let (max_score, after_id) = match (&query.after, query.updated_before) {
        (Some(after), before) => (
            after.score.min(before.unwrap_or(u64::MAX)).to_string(),
            if before.is_some_and(|before| before < after.score) {
                String::new()
            } else {
                shorten(&after.session_id)
            },
        ),
        (None, Some(before)) => (before.to_string(), String::new()),
        (None, None) => ("+inf".to_owned(), String::new()),
    };
    Cursor {
        max_score,
        after_id,
    }
}

/// `index_page.lua`'s reply as a [`SourcePage`].
fn source_page(reply: Vec<String>) -> SourcePage {
    let mut fields = reply.into_iter();
    let (Some(exhausted), Some(score), Some(id)) = (fields.next(), fields.next(), fields.next())
    else {
        return SourcePage {
            hits: Vec::new(),
            frontier: None,
        };
    };
    let frontier = (exhausted != "1").then(|| IndexPosition {
        score: parse_score(&score),
        session_id: id,
    });
    let mut hits = Vec::new();
    while let (Some(id), Some(score)) = (fields.next(), fields.next()) {
        hits.push(IndexPosition {
            score: parse_score(&score),
            session_id: id,
        });
    }
    SourcePage { hits, frontier }
}

/// Every hit of `pages`, newest first, each once.
fn sorted_hits(pages: &[SourcePage]) -> Vec<IndexPosition> {
    let mut hits: Vec<IndexPosition> = pages
        .iter()
        .flat_map(|page| page.hits.iter().cloned())
        .collect();
    hits.sort_by(|a, b| b.cmp(a));
    hits.dedup();
    hits
}

/// The `limit`-th hit of `pages`, if they hold that many.
fn page_last(pages: &[SourcePage], limit: usize) -> Option<IndexPosition> {
    sorted_hits(pages).into_iter().nth(limit - 1)
}

/// The page `pages` make: their hits down to the highest place a source stopped at (below it,
/// that source may hold more), at most `limit`, named by full id; the next page starts after
/// its last hit, or at that place when it is not full.
fn merged(pages: Vec<SourcePage>, limit: usize) -> IndexPage {
    let bound = pages.iter().filter_map(|page| page.frontier.clone()).max();
    let mut hits = sorted_hits(&pages);
    if let Some(bound) = &bound {
        hits.retain(|hit| hit >= bound);
    }
    hits.truncate(limit);
    let next = if hits.len() == limit {
        hits.last().cloned()
    } else {
        bound
    };
    let named = |position: IndexPosition| IndexPosition {
        score: position.score,
        session_id: expand(&position.session_id),
    };
    IndexPage {
        hits: hits.into_iter().map(named).collect(),
        next: next.map(named),
    }
}
