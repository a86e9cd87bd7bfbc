//! `baton`: the command line of Baton. `baton run` starts a session and prints it live. Every
//! command goes through the `Client` trait, over HTTP or (with `--grpc` or a `grpc://` server)
//! gRPC.

mod follow;
mod operator;

use anyhow::Context;
use baton_client::{
    Client, GrpcClient, HttpClient,
    render::{field, json as json_line, json_pretty},
};
use baton_wire::{
    message::{ToolError, ToolOutcome},
    session::{ApprovalDecision, Continuation},
    submit::SubmitAnswer,
};
use clap::{Parser, Subcommand};
use follow::{AtPause, follow};
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(name = "baton", version, about = "Talk to a Baton server")]
struct Cli {
    /// The Baton server: its HTTP address, or `grpc://host:port` for its gRPC service.
    #[arg(
        long,
        env = "BATON_SERVER",
        default_value = "http://127.0.0.1:8080",
        global = true
    )]
    server: String,
    /// Talk gRPC to the service at this address (`host:port`) instead of HTTP to --server.
    #[arg(long, env = "BATON_GRPC", global = true)]
    grpc: Option<String>,
    /// Bearer credentials: an operator key, or a session token from `/start`.
    #[arg(long, env = "BATON_TOKEN", global = true, hide_env_values = true)]
    token: Option<String>,
    /// Print raw JSON chunks, one per line, instead of readable text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start a session and print it as it runs, until it ends or suspends on client calls;
    /// exits non-zero if the run fails.
    Run {
        /// The agent type.
        #[arg(long)]
        agent: String,
        /// The first user message.
        message: String,
        /// Answer client calls (one line each: JSON, or else text) and approvals (y/N) from
        /// standard input and resume, instead of stopping at a suspension.
        #[arg(long)]
        answer: bool,
    },
    /// Follow a session's stream from a sequence (exclusive) until its run ends, across its
    /// pauses for people (each named as it comes: answer them from another terminal).
    Watch {
        session_id: String,
        #[arg(long, default_value_t = 0)]
        from: u64,
    },
    /// Print a session's status as JSON.
    Status { session_id: String },
    /// Print a session's log pinned to a stream position as JSON.
    Snapshot { session_id: String },
    /// Print what a session has spent as JSON.
    Usage { session_id: String },
    /// Answer a pending client call, with a JSON result or an error message.
    Submit {
        session_id: String,
        tool_call_id: String,
        /// The result, as JSON.
        #[arg(long, conflicts_with = "error", required_unless_present = "error")]
        result: Option<String>,
        /// A failure message instead of a result.
        #[arg(long)]
        error: Option<String>,
    },
    /// Approve an approval-gated call: by its call id alone (found in `baton pending`), or by
    /// session, call and approval id (the approvalId comes with its tool_approval_request). Once
    /// the session's batch is answered, it resumes and is followed to its next pause or end.
    Approve {
        /// The call id, or with the next two arguments the session id.
        first: String,
        tool_call_id: Option<String>,
        #[arg(requires = "tool_call_id")]
        approval_id: Option<String>,
        /// Run the call with these arguments (JSON) instead of the model's.
        #[arg(long)]
        arguments: Option<String>,
        #[command(flatten)]
        then: Then,
    },
    /// Deny an approval-gated call (by call id alone, or session, call and approval id); the
    /// model sees the denial with the reason. The session goes on as after `approve`.
    Deny {
        /// The call id, or with the next two arguments the session id.
        first: String,
        tool_call_id: Option<String>,
        #[arg(requires = "tool_call_id")]
        approval_id: Option<String>,
        #[arg(long)]
        reason: Option<String>,
        #[command(flatten)]
        then: Then,
    },
    /// Answer a client call waiting on a person by its call id (from `baton pending`): a JSON
    /// result (or else text), or a failure message. The session goes on as after `approve`.
    Answer {
        tool_call_id: String,
        /// The result: JSON, or else text.
        #[arg(conflicts_with = "error", required_unless_present = "error")]
        result: Option<String>,
        #[arg(long)]
        error: Option<String>,
        #[command(flatten)]
        then: Then,
    },
    /// List sessions, newest activity first (one page; --json for the page as JSON).
    Sessions {
        #[command(flatten)]
        filters: operator::Filters,
    },
    /// List the calls waiting on a person across sessions (one page).
    Pending {
        #[command(flatten)]
        filters: operator::Filters,
    },
    /// Copy a session up to a checkpoint into a new session (the original is untouched); print
    /// the fork as JSON.
    Fork { session_id: String, checkpoint: u32 },
    /// Stop the session's current run; the session becomes interrupted.
    Interrupt { session_id: String },
    /// Stop the session's current run; the session fails with framework_cancelled.
    Abort { session_id: String },
    /// Delete a session tree from its root once no run works on it (one waiting on a person is
    /// interrupted first): its log, stream, calls and answers are gone for good.
    Delete { session_id: String },
    /// Continue a suspended session whose calls are all answered, or, with --message, send the
    /// next user message (to a suspended or an ended session), or, with --checkpoint, rewind the
    /// session to a checkpoint and go on from there; print the run as it goes.
    Resume {
        session_id: String,
        /// The next user message (resume mode with_message; with --checkpoint, appended after
        /// the rewind).
        #[arg(long)]
        message: Option<String>,
        /// With --message: answer the calls still open as abandoned.
        #[arg(long, requires = "message")]
        abandon_pending: bool,
        /// Rewind to this checkpoint first (resume mode from_checkpoint).
        #[arg(long)]
        checkpoint: Option<u32>,
    },
}

/// What `answer`, `approve` and `deny` do once the answer is stored.
#[derive(Debug, clap::Args)]
struct Then {
    /// Only store the answer: do not resume the session or follow it (prints the submit's
    /// answer as JSON).
    #[arg(long)]
    no_follow: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let had_token = cli.token.is_some();
    match run(cli).await {
        Ok(code) => code,
        Err(error) => {
            // The message may carry what the server said: escaped like all it sends.
            eprintln!("baton: {}", field(&format!("{error:#}")));
            if let Some(hint) = credential_hint(&error, had_token) {
                eprintln!("baton: {hint}");
            }
            ExitCode::FAILURE
        }
    }
}

/// What to do about a refused credential: which flag gives one, or that the one given was not
/// taken (a wrong key, an expired or revoked token, one for another session).
fn credential_hint(error: &anyhow::Error, had_token: bool) -> Option<&'static str> {
    use baton_wire::error::ErrorCode;
    let code = error.chain().find_map(|cause| match cause.downcast_ref() {
        Some(baton_client::Error::Api(refused)) => Some(refused.code),
        _ => None,
    })?;
    match (code, had_token) {
        (ErrorCode::Unauthorized, false) => Some(
            "the server wants a credential: pass --token <operator key or token> (or set \
             BATON_TOKEN)",
        ),
        (ErrorCode::Unauthorized, true) => Some(
            "the server refused the --token (BATON_TOKEN) given: a wrong key, or an expired or \
             revoked token",
        ),
        (ErrorCode::Forbidden | ErrorCode::SessionMismatch, _) => Some(
            "the --token (BATON_TOKEN) given may not act on this: use an operator key or the \
             session's own token",
        ),
        _ => None,
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let token = cli.token.as_deref();
    let client: Box<dyn Client> = match (cli.grpc.as_deref(), cli.server.strip_prefix("grpc://")) {
        (Some(address), _) | (None, Some(address)) => match token {
            Some(token) => Box::new(GrpcClient::with_bearer(address, token)?),
            None => Box::new(GrpcClient::new(address)?),
        },
        (None, None) => match token {
            Some(token) => Box::new(HttpClient::with_bearer(&cli.server, token)?),
            None => Box::new(HttpClient::new(&cli.server)),
        },
    };
    let client = client.as_ref();
    match cli.command {
        Command::Run {
            agent,
            message,
            answer,
        } => {
            let started = client
                .start(&agent, &message)
                .await
                .context("starting the session")?;
            if !cli.json {
                println!(
                    "session {} (agent {})",
                    field(&started.session_id),
                    field(&agent)
                );
            }
            let at_pause = if answer {
                AtPause::Answer
            } else {
                AtPause::Stop
            };
            follow(client, &started.session_id, 0, cli.json, at_pause).await
        }
        Command::Watch { session_id, from } => {
            follow(client, &session_id, from, cli.json, AtPause::Watch).await
        }
        Command::Submit {
            session_id,
            tool_call_id,
            result,
            error,
        } => {
            let outcome = match (result, error) {
                (Some(result), _) => ToolOutcome::Result(
                    serde_json::from_str(&result).context("--result must be JSON")?,
                ),
                (None, Some(message)) => ToolOutcome::Error(ToolError::new(
                    baton_wire::submit::CLIENT_TOOL_ERROR,
                    message,
                )),
                (None, None) => anyhow::bail!("give --result or --error"),
            };
            let answer = client.submit(&session_id, &tool_call_id, &outcome).await?;
            println!("{}", json_line(&answer)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Resume {
            session_id,
            message,
            abandon_pending,
            checkpoint,
        } => {
            let before = client.status(&session_id).await?.last_sequence;
            let resumed = match (checkpoint, message) {
                (Some(checkpoint), message) => {
                    client
                        .rewind(&session_id, checkpoint, message.as_deref(), abandon_pending)
                        .await?
                }
                (None, Some(message)) => {
                    client
                        .send_message(&session_id, &message, abandon_pending)
                        .await?
                }
                (None, None) => client.resume(&session_id).await?,
            };
            if !cli.json {
                match &resumed.workflow_id {
                    Some(workflow_id) => println!(
                        "resumed as run {} ({})",
                        field(&resumed.run_id),
                        field(workflow_id)
                    ),
                    None => println!(
                        "resumed as run {}, which awaits answers",
                        field(&resumed.run_id)
                    ),
                }
            }
            follow(client, &session_id, before, cli.json, AtPause::Stop).await
        }
        Command::Approve {
            first,
            tool_call_id,
            approval_id,
            arguments,
            then,
        } => {
            let (session_id, tool_call_id, approval_id) =
                approval_target(client, first, tool_call_id, approval_id).await?;
            let arguments = arguments
                .map(|a| serde_json::from_str(&a).context("--arguments must be JSON"))
                .transpose()?;
            let decision = ApprovalDecision {
                approved: true,
                reason: None,
                arguments,
            };
            let before = client.status(&session_id).await?.last_sequence;
            let answer = client
                .submit_approval(&session_id, &tool_call_id, &approval_id, &decision)
                .await?;
            go_on(client, &session_id, before, answer, then, cli.json).await
        }
        Command::Deny {
            first,
            tool_call_id,
            approval_id,
            reason,
            then,
        } => {
            let (session_id, tool_call_id, approval_id) =
                approval_target(client, first, tool_call_id, approval_id).await?;
            let decision = ApprovalDecision {
                approved: false,
                reason,
                arguments: None,
            };
            let before = client.status(&session_id).await?.last_sequence;
            let answer = client
                .submit_approval(&session_id, &tool_call_id, &approval_id, &decision)
                .await?;
            go_on(client, &session_id, before, answer, then, cli.json).await
        }
        Command::Answer {
            tool_call_id,
            result,
            error,
            then,
        } => {
            let call = operator::find_pending(client, &tool_call_id).await?;
            let outcome = match (result, error) {
                (Some(result), _) => ToolOutcome::Result(
                    serde_json::from_str(&result).unwrap_or(serde_json::Value::String(result)),
                ),
                (None, Some(message)) => ToolOutcome::Error(ToolError::new(
                    baton_wire::submit::CLIENT_TOOL_ERROR,
                    message,
                )),
                (None, None) => anyhow::bail!("give a result or --error"),
            };
            let before = client.status(&call.session_id).await?.last_sequence;
            let answer = client
                .submit(&call.session_id, &tool_call_id, &outcome)
                .await?;
            go_on(client, &call.session_id, before, answer, then, cli.json).await
        }
        Command::Fork {
            session_id,
            checkpoint,
        } => {
            let request = baton_wire::fork::ForkRequest {
                session_id,
                checkpoint,
            };
            print_json(&client.fork(&request).await?)
        }
        Command::Sessions { filters } => {
            operator::sessions(client, filters, cli.json).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Pending { filters } => {
            operator::pending(client, filters, cli.json).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Interrupt { session_id } => {
            let stopped = client.stop(&session_id, false).await?;
            println!("{}", json_line(&stopped)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Abort { session_id } => {
            let stopped = client.stop(&session_id, true).await?;
            println!("{}", json_line(&stopped)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Delete { session_id } => {
            let deleted = client.delete(&session_id).await?;
            println!("{}", json_line(&deleted)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Status { session_id } => print_json(&client.status(&session_id).await?),
        Command::Snapshot { session_id } => print_json(&client.snapshot(&session_id).await?),
        Command::Usage { session_id } => print_json(&client.usage(&session_id).await?),
    }
}

/// The session, call and approval id an `approve` or `deny` names: all three given, or the call
/// id alone, looked up in the inbox.
async fn approval_target(
    client: &dyn Client,
    first: String,
    tool_call_id: Option<String>,
    approval_id: Option<String>,
) -> anyhow::Result<(String, String, String)> {
    match (tool_call_id, approval_id) {
        (Some(tool_call_id), Some(approval_id)) => Ok((first, tool_call_id, approval_id)),
        (Some(_), None) => anyhow::bail!("give the approval id after the call id"),
        (None, _) => {
            let call = operator::find_pending(client, &first).await?;
            let approval_id = call
                .approval_id
                .with_context(|| format!("call {first} is not an approval"))?;
            Ok((call.session_id, first, approval_id))
        }
    }
}

/// After an answer to a call of `session_id` (a root) stored while its stream was at `before`:
/// with `--no-follow` the submit's answer as JSON; else, when the answer completed the batch,
/// the session resumed (unless the server resumed it already) and followed to its next pause or
/// end, as `resume` does; when calls remain, which ones.
async fn go_on(
    client: &dyn Client,
    session_id: &str,
    before: u64,
    answer: SubmitAnswer,
    then: Then,
    json: bool,
) -> anyhow::Result<ExitCode> {
    if then.no_follow || json {
        println!("{}", json_line(&answer)?);
    }
    if then.no_follow {
        return Ok(ExitCode::SUCCESS);
    }
    let said = |line: String| {
        if !json {
            println!("{line}");
        }
    };
    match answer.continuation {
        Continuation::CallerResumes => match client.resume(session_id).await {
            Ok(resumed) => said(format!(
                "answered; resumed as run {}",
                field(&resumed.run_id)
            )),
            // Another entry (a second terminal, the deadline) resumed first: follow its run.
            Err(baton_client::Error::Api(error))
                if error.code == baton_wire::error::ErrorCode::StateAlreadyRunning =>
            {
                said("answered; the session was resumed elsewhere".to_owned());
            }
            Err(error) => return Err(error.into()),
        },
        Continuation::NewRun { run_id } => {
            said(format!(
                "answered; the server resumed it as run {}",
                field(&run_id)
            ));
        }
        Continuation::AwaitingBatch => {
            let waiting: Vec<String> = client
                .status(session_id)
                .await?
                .pending
                .into_iter()
                .map(|call| field(&call.tool_call_id).to_string())
                .collect();
            said(format!(
                "answered; the session goes on once these are answered too: {}",
                waiting.join(", ")
            ));
            return Ok(ExitCode::SUCCESS);
        }
        Continuation::Consumed => {
            said("already answered: an earlier continuation took this answer".to_owned());
            return Ok(ExitCode::SUCCESS);
        }
    }
    follow(client, session_id, before, json, AtPause::Stop).await
}

/// Prints an answer as indented JSON.
fn print_json(answer: &impl serde::Serialize) -> anyhow::Result<ExitCode> {
    println!("{}", json_pretty(answer)?);
    Ok(ExitCode::SUCCESS)
}
