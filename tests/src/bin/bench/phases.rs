//! Where a step's time goes, read from a workflow's history: for each activity, the time from
//! its scheduling to a worker taking it (dispatch), from then to its completion (the activity
//! itself and its completion call), and from its completion to the next activity's scheduling
//! (the workflow task in between). The same split for the bare workflow and an agent session
//! says which part an agent step pays more for.

use crate::summary;
use temporalio_common::protos::temporal::api::{enums::v1::EventType, history::v1::HistoryEvent};

/// The medians of one workflow's activity phases, in milliseconds.
pub struct Phases {
    pub dispatch: f64,
    pub run: f64,
    pub workflow_task: f64,
    pub workflow_task_dispatch: f64,
}

/// The number of activities scheduled in `events`.
pub fn activities(events: &[HistoryEvent]) -> usize {
    events
        .iter()
        .filter(|e| e.event_type() == EventType::ActivityTaskScheduled)
        .count()
}

fn millis(event: &HistoryEvent) -> f64 {
    event.event_time.as_ref().map_or(0.0, |t| {
        t.seconds as f64 * 1000.0 + f64::from(t.nanos) / 1e6
    })
}

/// The phases of the activities in `events` (a history of activities run one after another)
/// whose index is in `which` (of all of them: `..`).
pub fn phases(events: &[HistoryEvent], which: impl std::ops::RangeBounds<usize>) -> Phases {
    let time_of = |kind: EventType| -> Vec<f64> {
        events
            .iter()
            .filter(|e| e.event_type() == kind)
            .map(millis)
            .collect()
    };
    let scheduled = time_of(EventType::ActivityTaskScheduled);
    let started = time_of(EventType::ActivityTaskStarted);
    let completed = time_of(EventType::ActivityTaskCompleted);
    let task_scheduled = time_of(EventType::WorkflowTaskScheduled);
    let task_started = time_of(EventType::WorkflowTaskStarted);
    let count = scheduled.len().min(started.len()).min(completed.len());
    let chosen: Vec<usize> = (0..count).filter(|i| which.contains(i)).collect();
    let spans = |from: &[f64], to: &[f64], offset: usize| -> Vec<f64> {
        chosen
            .iter()
            .filter_map(|&i| Some(to.get(i + offset)? - from.get(i)?))
            .collect()
    };
    // Workflow task i + 1 follows activity i's completion (task 0 is the run's first).
    let task_dispatch: Vec<f64> = chosen
        .iter()
        .filter_map(|&i| Some(task_started.get(i + 1)? - task_scheduled.get(i + 1)?))
        .collect();
    let median = |samples: Vec<f64>| {
        if samples.is_empty() {
            f64::NAN
        } else {
            summary(samples).0
        }
    };
    Phases {
        dispatch: median(spans(&scheduled, &started, 0)),
        run: median(spans(&started, &completed, 0)),
        workflow_task: median(spans(&completed, &scheduled, 1)),
        workflow_task_dispatch: median(task_dispatch),
    }
}

/// Prints the phases of the bare workflow and of the agent sessions side by side.
pub fn print_phases(rows: &[(&str, Phases)]) {
    println!(
        "| where a step goes (median ms, from the history's event times) | activity dispatch | activity run and completion | completion → next activity scheduled | of which the workflow task's dispatch |"
    );
    println!("|---|---:|---:|---:|---:|");
    for (name, p) in rows {
        println!(
            "| {name} | {:.2} | {:.2} | {:.2} | {:.2} |",
            p.dispatch, p.run, p.workflow_task, p.workflow_task_dispatch
        );
    }
    println!();
}
