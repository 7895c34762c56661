//! The docs tools. A lookup or a read ends as soon as its caller cancels it.

use super::entry::tool;
use super::{CallError, Entry};
use crate::call::Call;
use crate::docs::reports::{IngestReport, LookupReport, ReadReport};
use crate::docs::requests::{IndexRequest, LookupRequest, ReadRequest};

pub(super) const TOOLS: &[Entry] = &[
    tool!(
        DocsLookup(LookupRequest) -> LookupReport,
        "Search the local documentation index (vectors + full text, fused) for the exact passage: Rust book, std, cargo, error codes, Elixir's stdlib, and every indexed crate or hex package at its version. Ask in words (\"how do I share a Vec between threads\") or by identifier (`E0502`, `Enum.chunk_every`, `--message-format`). With project_path, only that project's own docs, its dependencies at the versions its lock file pins and its language's toolchain docs. Returns the 30 best results (read them all: the answer is often not first) with library, version, file, heading, anchor and lines: the first 3 with their whole passage, the next 7 with the sentences that best match the question, the rest by their heading path; each has an id, and docs_read {id} gives that passage whole.",
        |app, request, context| unless_cancelled(context.call, app.docs().lookup(request)),
    ),
    tool!(
        DocsRead(ReadRequest) -> ReadReport,
        "Read a passage docs_lookup found, by the id it gave: the passage whole (default), its whole section (`around: \"section\"`: every passage under the same heading) or its neighbours (`around: \"neighbours\"`: the passages before and after it in its file).",
        |app, request, context| unless_cancelled(context.call, app.docs().read(request)),
    ),
    tool!(
        DocsIndex(IndexRequest) -> IngestReport,
        "Add documentation to the local index, incrementally (unchanged files are skipped, changed ones replaced, deleted ones removed): `project_path` (a cargo or mix project: its own docs and its dependencies' READMEs and API docs at their locked versions; `transitive` for every locked package), `paths` (files or directories of Markdown, text, HTML, Rust or Elixir sources) and/or `toolchain_docs` (the Rust docs rustup installed and Elixir's standard library). Sends progress notifications; embedding runs at tens of passages per second (the whole toolchain docs, about 49k passages, take about 10 minutes on 2 cores), so a large corpus takes minutes. Cancelling keeps what was committed; the next call continues.",
        |app, request, context| app.docs().index(request, context.call),
    ),
];

/// `work`'s result, or [`CallError::Cancelled`] as soon as the caller cancels.
async fn unless_cancelled<T, E: Into<CallError>>(
    call: &Call<'_>,
    work: impl Future<Output = Result<T, E>>,
) -> Result<T, CallError> {
    tokio::select! {
        result = work => result.map_err(Into::into),
        () = call.cancelled() => Err(CallError::Cancelled),
    }
}
