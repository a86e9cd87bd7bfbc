//! The campaign's one table: a row per scenario, printed as Markdown (`docs/reliability.md` keeps
//! every run's; the README, the newest).

use crate::invariants::Findings;

/// One scenario's figures.
#[derive(Debug, Default)]
pub struct Row {
    /// The scenario's name on the command line (`--only`).
    pub name: String,
    pub scenario: String,
    /// Sessions run (or requests, for the generated requests).
    pub runs: String,
    pub faults: String,
    pub accepted: usize,
    pub lost: usize,
    pub duplicated: usize,
    pub server_errors: u64,
    /// p50 / p99 in ms of what the scenario measures, with its name.
    pub latency: Option<(String, f64, f64)>,
    /// Whether the scenario's own checks and the invariants held.
    pub passed: bool,
    /// Why not, or what else was measured.
    pub notes: Vec<String>,
}

impl Row {
    pub fn new(scenario: &str) -> Self {
        Self {
            scenario: scenario.to_owned(),
            passed: true,
            ..Self::default()
        }
    }

    /// Takes the invariants' findings into the row: a broken invariant fails it.
    pub fn invariants(&mut self, findings: &Findings) {
        self.accepted = findings.accepted;
        self.lost = findings.lost.len();
        self.duplicated = findings.duplicated.len();
        if !findings.held() {
            self.passed = false;
            self.notes.extend(findings.describe());
        }
    }

    /// A check of the scenario's own: a false one fails the row with `why`.
    pub fn require(&mut self, holds: bool, why: impl Into<String>) {
        if !holds {
            self.passed = false;
            self.notes.push(why.into());
        }
    }

    /// A check on a time or a size: it fails the row in the long form; the short form (CI, on a
    /// shared machine and a debug build) only notes it.
    pub fn require_timed(
        &mut self,
        campaign: &crate::Campaign,
        holds: bool,
        why: impl Into<String>,
    ) {
        if campaign.short {
            if !holds {
                self.notes.push(format!(
                    "{} (timed check, noted only in --short)",
                    why.into()
                ));
            }
        } else {
            self.require(holds, why);
        }
    }

    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    /// A row for a scenario that could not run to its end.
    pub fn aborted(scenario: &str, error: &anyhow::Error) -> Self {
        let mut row = Self::new(scenario);
        row.passed = false;
        row.notes.push(format!("did not complete: {error:#}"));
        row
    }
}

pub fn print(rows: &[Row]) {
    println!(
        "| scenario | runs | faults injected | accepted answers | lost | duplicated | 5xx | p50 / p99 ms | verdict |"
    );
    println!("|---|---:|---|---:|---:|---:|---:|---|---|");
    for row in rows {
        let latency = row
            .latency
            .as_ref()
            .map(|(what, p50, p99)| format!("{what}: {p50:.1} / {p99:.1}"))
            .unwrap_or_else(|| "–".to_owned());
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.scenario,
            row.runs,
            row.faults,
            row.accepted,
            row.lost,
            row.duplicated,
            row.server_errors,
            latency,
            if row.passed { "pass" } else { "FAIL" },
        );
    }
    let notes: Vec<_> = rows.iter().filter(|row| !row.notes.is_empty()).collect();
    if !notes.is_empty() {
        println!();
        for row in notes {
            for note in &row.notes {
                println!("- {}: {note}", row.scenario);
            }
        }
    }
}
