//! docs_lookup, docs_index and drydock://docs over MCP against a real server, and
//! `drydock index` / `drydock call` from the shell: the empty index explains itself, an
//! ingest reports progress, lookups return located passages, and bad requests change nothing.

use crate::support::*;
use serde_json::{Value, json};

/// `text` with whitespace runs made one space, for comparing re-flowed sentences.
fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

async fn read_docs_resource(client: &rmcp::service::Peer<rmcp::RoleClient>) -> Value {
    serde_json::from_str(&read_text_resource(client, "drydock://docs").await).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_fills_the_index_and_finds_passages() {
    let (_keep, project) = copy_project("docs-deps");
    let root = project.parent().unwrap().to_path_buf();
    let index = tempfile::tempdir().unwrap();
    let server = Server::start_with(
        &[
            "--allow-root",
            root.to_str().unwrap(),
            "--index",
            index.path().to_str().unwrap(),
        ],
        &[],
    );
    let (client, recorder) = progress_client(&server.url).await;

    // Empty: a normal answer that says how to fill the index.
    let empty = call_ok(&client, "docs_lookup", json!({"query": "badge colour"})).await;
    assert_eq!(empty["results"], json!([]));
    assert!(
        empty["message"].as_str().unwrap().contains("docs_index"),
        "{empty}"
    );
    let summary = read_docs_resource(&client).await;
    assert_eq!(summary["chunks"], 0);
    assert_eq!(summary["model"], "all-MiniLM-L6-v2-int8");

    // Bad requests: errors, and nothing is created.
    let outside = call_err(&client, "docs_index", json!({"paths": ["/etc"]})).await;
    assert!(outside.contains("outside the allowed roots"), "{outside}");
    let nothing = call_err(&client, "docs_index", json!({})).await;
    assert!(nothing.contains("project_path"), "{nothing}");
    let limit = call_err(&client, "docs_lookup", json!({"query": "x", "limit": 0})).await;
    assert!(
        limit.contains("0 is out of range") && limit.contains("from 1 to 50"),
        "{limit}"
    );
    let missing = client
        .call_tool(tool_call("docs_lookup", json!({"limit": 3})))
        .await;
    match missing {
        Err(error) => assert!(error.to_string().contains("query"), "{error}"),
        Ok(result) => {
            assert_eq!(result.is_error, Some(true), "{result:?}");
            assert!(text_of(&result).contains("query"), "{result:?}");
        }
    }
    assert!(!index.path().join("chunks.lance").exists());

    let result = call_with_progress(
        &client,
        "docs_index",
        json!({"project_path": project.to_str().unwrap()}),
        "ingest-1",
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{}", text_of(&result));
    let report = result.structured_content.clone().unwrap();
    assert!(report["files_indexed"].as_u64().unwrap() >= 5, "{report}");
    assert!(report["chunks_embedded"].as_u64().unwrap() > 0);
    assert!(
        text_of(&result).starts_with("indexed:"),
        "{}",
        text_of(&result)
    );
    let progress = recorder.snapshot();
    assert!(
        progress.iter().any(|m| m.contains("embeddings/s")),
        "{progress:?}"
    );

    let found = call(
        &client,
        "docs_lookup",
        json!({
            "query": "what colour is the badge drawn in for a pre-release version",
            "project_path": project.to_str().unwrap(),
            "limit": 3
        }),
    )
    .await;
    let structured = found.structured_content.clone().unwrap();
    let top = &structured["results"][0];
    assert_eq!(top["library"], "docs-deps", "{structured}");
    for field in [
        "content",
        "version",
        "source_type",
        "file_path",
        "heading",
        "line_start",
        "line_end",
        "score",
    ] {
        assert!(!top[field].is_null(), "{field} in {top}");
    }
    assert!(
        text_of(&found).starts_with("[1] docs-deps 0.3.0"),
        "{}",
        text_of(&found)
    );

    let api = call_ok(
        &client,
        "docs_lookup",
        json!({"query": "itoa Buffer format", "library": "itoa", "source_types": ["api"]}),
    )
    .await;
    let results = api["results"].as_array().unwrap();
    assert!(
        !results.is_empty()
            && results
                .iter()
                .all(|r| r["library"] == "itoa" && r["source_type"] == "api"),
        "{api}"
    );

    // At the default size: thirty results, the first three whole, the next seven as their
    // best sentences, the rest named by their heading, each with an id that docs_read turns
    // into the passage, its section or its neighbours.
    let shaped = call(
        &client,
        "docs_lookup",
        json!({"query": "how do I parse a version number with a pre-release part"}),
    )
    .await;
    let structured = shaped.structured_content.clone().unwrap();
    let results = structured["results"].as_array().unwrap();
    assert_eq!(results.len(), 30, "{structured:#}");
    for (rank, result) in results.iter().enumerate() {
        let (whole, excerpt) = (rank < 3, (3..10).contains(&rank));
        assert_eq!(result["content"].is_string(), whole, "{rank}: {result}");
        assert_eq!(result["excerpt"].is_string(), excerpt, "{rank}: {result}");
        assert_eq!(result["id"].as_str().unwrap().len(), 12);
    }
    let named = &results[20];
    assert!(
        text_of(&shaped).contains(&format!(
            "[21] {} ({})\n",
            named["heading"].as_str().unwrap(),
            named["id"].as_str().unwrap()
        )),
        "{}",
        text_of(&shaped)
    );
    let later = &results[4];
    let excerpt = later["excerpt"].as_str().unwrap();
    let id = later["id"].as_str().unwrap();
    assert!(
        text_of(&shaped).contains(&format!("(id {id})\n{excerpt}")),
        "{}",
        text_of(&shaped)
    );
    let read = call_ok(&client, "docs_read", json!({"id": id})).await;
    let passages = read["passages"].as_array().unwrap();
    assert_eq!(passages.len(), 1, "{read}");
    let passage = passages[0]["content"].as_str().unwrap();
    assert!(
        excerpt
            .trim_start_matches("… ")
            .split(" … ")
            .all(|part| squash(passage).contains(&squash(part.trim_end_matches('…')))),
        "the excerpt's sentences come from the passage:\n{excerpt}\n---\n{passage}"
    );
    assert_eq!(passages[0]["heading"], later["heading"]);
    let section = call_ok(&client, "docs_read", json!({"id": id, "around": "section"})).await;
    for part in section["passages"].as_array().unwrap() {
        assert_eq!(part["heading"], later["heading"], "{section}");
    }
    let neighbours = call_ok(
        &client,
        "docs_read",
        json!({"id": id, "around": "neighbours"}),
    )
    .await;
    let lines: Vec<u64> = neighbours["passages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["line_start"].as_u64().unwrap())
        .collect();
    assert!(
        lines.windows(2).all(|w| w[0] <= w[1])
            && neighbours["passages"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["id"] == id),
        "{neighbours}"
    );
    let resource = read_text_resource(&client, &format!("drydock://docs/passage/{id}")).await;
    let resource: Value = serde_json::from_str(&resource).unwrap();
    assert_eq!(resource["passages"][0]["content"].as_str(), Some(passage));
    let unknown_id = call_err(&client, "docs_read", json!({"id": "0123456789ab"})).await;
    assert!(unknown_id.contains("look it up again"), "{unknown_id}");
    let not_an_id = call_err(&client, "docs_read", json!({"id": "zz"})).await;
    assert!(
        not_an_id.contains("not a docs_lookup result's id"),
        "{not_an_id}"
    );

    // A 100 kB query is refused at once; a library that is not indexed finds nothing and
    // says so; an ingest under way (here its file, for a process that runs: this one) is
    // reported beside the results.
    let huge = "how do I parse a number ".repeat(4200);
    let refused = call_err(&client, "docs_lookup", json!({"query": huge})).await;
    assert!(refused.contains("at most 2000"), "{refused}");
    let unknown = call_ok(
        &client,
        "docs_lookup",
        json!({"query": "badge colour", "library": "not-indexed"}),
    )
    .await;
    assert_eq!(unknown["results"], json!([]));
    assert!(
        unknown["message"].as_str().unwrap().contains("not-indexed"),
        "{unknown}"
    );
    let under_way = index.path().join("ingest-under-way.json");
    let state = json!({"pid": std::process::id(), "started_at_ms": 0, "files_total": 10,
                       "files_done": 3, "rows_written": 40});
    std::fs::write(&under_way, state.to_string()).unwrap();
    let partial = call_ok(&client, "docs_lookup", json!({"query": "badge colour"})).await;
    assert!(!partial["results"].as_array().unwrap().is_empty());
    assert!(
        partial["message"]
            .as_str()
            .unwrap()
            .starts_with("Indexing is under way (3 of 10 files, 40 passages written"),
        "{partial}"
    );
    std::fs::remove_file(&under_way).unwrap();

    let summary = read_docs_resource(&client).await;
    assert!(summary["chunks"].as_u64().unwrap() > 0);
    assert!(summary["last_update"].is_string());
    let libraries: Vec<&str> = summary["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["library"].as_str().unwrap())
        .collect();
    assert!(libraries.contains(&"semver"), "{libraries:?}");
}

#[test]
fn drydock_index_is_incremental_from_the_shell() {
    let docs = tempfile::tempdir().unwrap();
    std::fs::write(
        docs.path().join("deploy.md"),
        "# Deploying\n\n## Rolling back\n\nRun `fleet rollback --to PREVIOUS` to return every node to the last good release.\n",
    )
    .unwrap();
    let index = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let output = drydock_command()
            .args(args)
            .args(["--index", index.path().to_str().unwrap()])
            .current_dir(docs.path())
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (code, first, _) = run(&["index", "."]);
    assert_eq!(code, Some(0), "{first}");
    assert!(first.contains("1 indexed"), "{first}");
    let (code, again, _) = run(&["index", "."]);
    assert_eq!(code, Some(0));
    assert!(
        again.contains("1 unchanged") && again.contains("0 embedded"),
        "{again}"
    );
    let (code, json_out, stderr) = run(&[
        "call",
        "docs_lookup",
        r#"{"query": "how do I undo a bad release"}"#,
        "--allow-root",
        docs.path().to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let value: Value = serde_json::from_str(&json_out).unwrap();
    assert!(
        value["results"][0]["content"]
            .as_str()
            .unwrap()
            .contains("fleet rollback"),
        "{value}"
    );
    let (code, _, stderr) = run(&["index", "/no/such/path"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("/no/such/path"), "{stderr}");

    // Flags that only serving uses are not index's, and a config that could only be served
    // with a token still indexes.
    let (code, _, stderr) = run(&["index", ".", "--allow-root", "/"]);
    assert_eq!(code, Some(2), "{stderr}");
    let open_config = tempfile::tempdir().unwrap();
    let config_file = open_config.path().join("drydock.toml");
    std::fs::write(&config_file, "bind = \"0.0.0.0:7878\"\n").unwrap();
    let (code, again, stderr) = run(&["index", ".", "--config", config_file.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(again.contains("1 unchanged"), "{again}");
}
