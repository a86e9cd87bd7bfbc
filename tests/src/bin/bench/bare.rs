//! The bare Temporal measurements every ratio is taken against: one empty activity's round trip
//! and the start-workflow → first-activity time, on a worker of their own in the same process.

use crate::{Marks, gaps_ms};
use baton_tests::{temporal_settings, unique};
use baton_worker::connect_temporal;
use futures::StreamExt as _;
use std::{
    sync::Arc,
    time::{Duration, Instant},
};
use temporalio_client::{
    Client, WorkflowFetchHistoryOptions, WorkflowGetResultOptions, WorkflowStartOptions,
};
use temporalio_common::protos::temporal::api::history::v1::HistoryEvent;
use temporalio_macros::{activities, workflow, workflow_methods};
use temporalio_sdk::{
    ActivityOptions, LocalActivityOptions, Runtime, Worker, WorkerOptions, WorkflowContext,
    WorkflowResult,
    activities::{ActivityContext, ActivityError},
};
use tokio::sync::Semaphore;

/// The empty activity of the bare measurement; it only notes when it ran, and gives a permit
/// to whoever counts the runs (the floor's driver).
pub struct BareActivities {
    pub marks: Marks,
    pub ran: Arc<Semaphore>,
}

#[activities]
impl BareActivities {
    #[activity]
    pub async fn empty(
        self: Arc<Self>,
        _ctx: ActivityContext,
        _input: u32,
    ) -> Result<u32, ActivityError> {
        self.marks.lock().unwrap().push(Instant::now());
        self.ran.add_permits(1);
        Ok(0)
    }
}

/// Runs `count` empty activities one after the other.
#[workflow]
#[derive(Default)]
pub struct BareWorkflow;

#[workflow_methods]
impl BareWorkflow {
    #[run]
    pub async fn run(ctx: &mut WorkflowContext<Self>, count: u32) -> WorkflowResult<u32> {
        for i in 0..count {
            ctx.execute_activity(
                BareActivities::empty,
                i,
                ActivityOptions::start_to_close_timeout(Duration::from_secs(10)),
            )
            .await?;
        }
        Ok(count)
    }
}

/// Runs one empty local activity: the shape of a round that would need no activity task.
#[workflow]
#[derive(Default)]
pub struct BareLocalWorkflow;

#[workflow_methods]
impl BareLocalWorkflow {
    #[run]
    pub async fn run(ctx: &mut WorkflowContext<Self>, input: u32) -> WorkflowResult<u32> {
        ctx.execute_local_activity(
            BareActivities::empty,
            input,
            LocalActivityOptions::builder()
                .start_to_close_timeout(Duration::from_secs(10))
                .build(),
        )
        .await?;
        Ok(input)
    }
}

/// The bare workflows' worker: its task queue, the marks its empty activity leaves, and the
/// Temporal client it polls with (a start through it can be eager).
pub struct BareWorker {
    task_queue: String,
    marks: Marks,
    client: Client,
}

/// Runs the bare workflows' worker, polling through `client`, on a thread of its own.
pub fn spawn_bare_worker(client: Client) -> BareWorker {
    let marks: Marks = Arc::default();
    let task_queue = unique("bench-bare");
    let queue = task_queue.clone();
    let worker_marks = marks.clone();
    let worker_client = client.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let core = Runtime::from_current_tokio(Default::default()).unwrap();
            let options = WorkerOptions::new(queue)
                .register_activities(BareActivities {
                    marks: worker_marks,
                    ran: Arc::new(Semaphore::new(0)),
                })
                .register_workflow::<BareWorkflow>()
                .unwrap()
                .register_workflow::<BareLocalWorkflow>()
                .unwrap()
                .build();
            let mut worker = Worker::new(&core, worker_client, options).unwrap();
            worker.run().await.unwrap();
        });
    });
    BareWorker {
        task_queue,
        marks,
        client,
    }
}

/// Runs `count` + 1 empty activities in one bare workflow; returns the gaps between them and
/// the workflow's history.
pub async fn bare_round_trips(
    bare: &BareWorker,
    count: u32,
) -> anyhow::Result<(Vec<f64>, Vec<HistoryEvent>)> {
    let BareWorker {
        task_queue, marks, ..
    } = bare;
    marks.lock().unwrap().clear();
    let client = connect_temporal(&temporal_settings()).await?;
    let handle = client
        .start_workflow(
            BareWorkflow::run,
            count + 1,
            WorkflowStartOptions::new(task_queue.clone(), unique("bare")).build(),
        )
        .await?;
    handle
        .get_result(WorkflowGetResultOptions::default())
        .await?;
    let history = handle
        .fetch_history(WorkflowFetchHistoryOptions::default())
        .into_events()
        .await?;
    let marks = marks.lock().unwrap().clone();
    Ok((gaps_ms(&marks), history))
}

/// The dev server's bare start-workflow → first-activity time, `samples` times.
pub async fn bare_start_to_first_activity(
    bare: &BareWorker,
    samples: u32,
) -> anyhow::Result<Vec<f64>> {
    let BareWorker {
        task_queue, marks, ..
    } = bare;
    let client = connect_temporal(&temporal_settings()).await?;
    let mut times = Vec::new();
    for _ in 0..samples {
        marks.lock().unwrap().clear();
        let began = Instant::now();
        let handle = client
            .start_workflow(
                BareWorkflow::run,
                1,
                WorkflowStartOptions::new(task_queue.clone(), unique("bare")).build(),
            )
            .await?;
        handle
            .get_result(WorkflowGetResultOptions::default())
            .await?;
        let first = marks.lock().unwrap()[0];
        times.push((first - began).as_secs_f64() * 1000.0);
    }
    Ok(times)
}

/// The dev server's ceiling for workflows of one round's shape: bare workflows started (eagerly,
/// as `batond dev` starts resumed runs) and awaited, `count` in all, `in_flight` at once, each
/// running one empty activity (`local`: one empty local activity). Returns workflows per second.
pub async fn bare_workflows_per_second(
    bare: &BareWorker,
    count: usize,
    in_flight: usize,
    local: bool,
) -> anyhow::Result<f64> {
    let began = Instant::now();
    let one = || async move {
        let options = WorkflowStartOptions::new(bare.task_queue.clone(), unique("bare"))
            .enable_eager_workflow_start(true)
            .build();
        if local {
            bare.client
                .start_workflow(BareLocalWorkflow::run, 1, options)
                .await?
                .get_result(WorkflowGetResultOptions::default())
                .await?;
        } else {
            bare.client
                .start_workflow(BareWorkflow::run, 1, options)
                .await?
                .get_result(WorkflowGetResultOptions::default())
                .await?;
        }
        anyhow::Ok(())
    };
    let mut outcomes = futures::stream::iter((0..count).map(|_| one())).buffer_unordered(in_flight);
    while let Some(outcome) = outcomes.next().await {
        outcome?;
    }
    Ok(count as f64 / began.elapsed().as_secs_f64())
}
