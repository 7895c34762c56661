//! `[docs] model` and `[docs] reranker` end to end with local directories: the shipped
//! MiniLM given as a user's model, a tiny cross-encoder the test writes with
//! tests/fixtures/onnx/make_tiny_cross_encoder.py re-scoring lookups over MCP, an
//! index built with another model refused with the command that builds it again,
//! `drydock index --model` building it again, and the refusals of an unknown model and of a
//! catalogue model offline.

use std::path::{Path, PathBuf};

use crate::support::*;
use serde_json::{Value, json};

fn shipped_model() -> PathBuf {
    repo_root().join("models/all-MiniLM-L6-v2-int8")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

/// The tiny cross-encoder: a passage scores 1.0 for each "lighthouse" or "harbour" and -0.01
/// for every other word piece.
fn tiny_cross_encoder(into: &Path) {
    let made = std::process::Command::new("python3")
        .arg(repo_root().join("tests/fixtures/onnx/make_tiny_cross_encoder.py"))
        .arg(into)
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
}

/// Six sections, each long enough to be a passage of its own; the one the tiny reranker
/// favours most is not the one the question names.
fn write_docs(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let sections = [
        (
            "Guiding ships at night",
            "Ships are guided at night by beacons on the shore, and a pilot boat meets them outside the bay.",
        ),
        (
            "Lighthouse keepers",
            "A lighthouse keeper tends the lamp of the lighthouse above the harbour and logs the ships that pass.",
        ),
        (
            "Harbour walls",
            "The harbour wall breaks the waves before they reach the moored boats.",
        ),
        (
            "Tides",
            "Tides rise and fall twice a day; ships wait for high water to cross the bar.",
        ),
        (
            "Stone quarries",
            "Stone for the sea walls came from quarries inland, carried by cart.",
        ),
        (
            "Fishing fleets",
            "The fishing fleet leaves before dawn and returns with the evening tide.",
        ),
    ];
    let mut text = String::from("# Coast\n");
    for (heading, sentence) in sections {
        text += &format!("\n## {heading}\n\n{sentence}\n");
        for n in 1..=12 {
            text += &format!(
                "\nNote {n} on {}: the logbook for this part of the coast keeps a page for every season, written up by whoever was on watch that week.\n",
                heading.to_lowercase()
            );
        }
    }
    std::fs::write(dir.join("coast.md"), text).unwrap();
}

fn favoured(result: &Value) -> usize {
    let text = format!(
        "{} {}",
        result["heading"].as_str().unwrap_or_default(),
        result["content"]
            .as_str()
            .or(result["excerpt"].as_str())
            .unwrap_or_default()
    )
    .to_lowercase();
    text.matches("lighthouse").count() + text.matches("harbour").count()
}

fn config(dir: &Path, name: &str, docs: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("[docs]\n{docs}\n")).unwrap();
    path
}

fn serve(root: &Path, index: &Path, config: &Path) -> Server {
    Server::start_with(
        &[
            "--allow-root",
            root.to_str().unwrap(),
            "--index",
            index.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
        &[],
    )
}

async fn docs_resource(client: &rmcp::service::Peer<rmcp::RoleClient>) -> Value {
    serde_json::from_str(&read_text_resource(client, "drydock://docs").await).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_model_and_reranker_work_end_to_end_and_another_model_is_refused_until_rebuilt() {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().canonicalize().unwrap();
    let docs = root.join("coast docs");
    write_docs(&docs);
    let (minilm, tiny, cls) = (
        root.join("models/my minilm"),
        root.join("models/tiny"),
        root.join("models/cls-minilm"),
    );
    copy_dir(&shipped_model(), &minilm);
    tiny_cross_encoder(&tiny);
    let index = root.join("index");
    let query = "how are ships guided at night";

    // The shipped model given as a directory, and the reranker.
    let with_reranker = config(
        &root,
        "reranked.toml",
        &format!(
            "model = {:?}\nreranker = {:?}",
            minilm.display().to_string(),
            tiny.display().to_string()
        ),
    );
    let server = serve(&root, &index, &with_reranker);
    let client = modern_client(&server.url).await;
    call_ok(&client, "docs_index", json!({"paths": [path_arg(&docs)]})).await;
    let found = call_ok(&client, "docs_lookup", json!({"query": query})).await;
    let results = found["results"].as_array().unwrap();
    assert!(results.len() >= 4, "{found:#}");
    let counts: Vec<usize> = results.iter().map(favoured).collect();
    let headings: Vec<&str> = results
        .iter()
        .map(|r| r["heading"].as_str().unwrap())
        .collect();
    assert_eq!(
        headings[..2],
        ["Coast > Lighthouse keepers", "Coast > Harbour walls"],
        "the reranker's favourites first"
    );
    assert!(
        counts.windows(2).all(|w| w[0] >= w[1]),
        "not in the reranker's order: {counts:?}"
    );
    let scores: Vec<f64> = results
        .iter()
        .map(|r| r["score"].as_f64().unwrap())
        .collect();
    // The cross-encoder's scores (fusion's are below 0.05): one per favoured word less a
    // hundredth per other word piece, below zero for a passage without a favoured word.
    assert!(
        scores[0] > 1.0 && scores.windows(2).all(|w| w[0] >= w[1]),
        "{scores:?}"
    );
    assert!(
        results
            .iter()
            .zip(&scores)
            .all(|(r, s)| favoured(r) > 0 || *s < 0.0),
        "{scores:?}"
    );
    let summary = docs_resource(&client).await;
    assert_eq!(summary["model"], "all-MiniLM-L6-v2-int8", "{summary:#}");
    assert_eq!(
        summary["reranker"],
        tiny.display().to_string(),
        "{summary:#}"
    );
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(index.join("drydock-index.json")).unwrap())
            .unwrap();
    assert_eq!(recorded["reranker"], tiny.display().to_string());
    assert_eq!(
        recorded["sources"].as_array().unwrap().len(),
        1,
        "{recorded:#}"
    );
    drop(client);
    drop(server);

    // Another model (mean pooling made CLS): the index is refused with the command that
    // builds it again, and nothing changes.
    copy_dir(&minilm, &cls);
    std::fs::create_dir_all(cls.join("1_Pooling")).unwrap();
    std::fs::write(
        cls.join("1_Pooling/config.json"),
        r#"{"word_embedding_dimension": 384, "pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#,
    )
    .unwrap();
    let other = config(
        &root,
        "other.toml",
        &format!("model = {:?}", cls.display().to_string()),
    );
    let before = std::fs::read_to_string(index.join("drydock-index.json")).unwrap();
    let server = serve(&root, &index, &other);
    let client = modern_client(&server.url).await;
    let refused = call_err(&client, "docs_lookup", json!({"query": query})).await;
    for said in [
        "built with the embedding model all-MiniLM-L6-v2-int8",
        "cls-minilm@",
        &format!("drydock index --model {}", cls.display()),
    ] {
        assert!(refused.contains(said), "{said}: {refused}");
    }
    assert_eq!(
        std::fs::read_to_string(index.join("drydock-index.json")).unwrap(),
        before
    );

    // `drydock index --model` builds it again from what it recorded and what it is given,
    // and the same server then answers.
    let more = root.join("more docs");
    std::fs::create_dir_all(&more).unwrap();
    std::fs::write(
        more.join("buoys.md"),
        "# Buoys\n\nRed and green buoys mark the two sides of the channel.\n",
    )
    .unwrap();
    let rebuilt = drydock_command()
        .args(["index", "--model"])
        .arg(&cls)
        .arg("--index")
        .arg(&index)
        .arg("--data-dir")
        .arg(root.join("data"))
        .arg(&more)
        .output()
        .unwrap();
    assert!(rebuilt.status.success(), "{rebuilt:?}");
    let said = String::from_utf8_lossy(&rebuilt.stderr);
    assert!(said.contains("now holds vectors of cls-minilm@"), "{said}");
    let found = call_ok(&client, "docs_lookup", json!({"query": query})).await;
    assert!(found["results"].as_array().unwrap().len() >= 4, "{found:#}");
    let buoys = call_ok(
        &client,
        "docs_lookup",
        json!({"query": "which buoys mark the channel"}),
    )
    .await;
    assert_eq!(buoys["results"][0]["library"], "more docs", "{buoys:#}");
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(index.join("drydock-index.json")).unwrap())
            .unwrap();
    assert_eq!(
        recorded["sources"].as_array().unwrap().len(),
        2,
        "{recorded:#}"
    );
    let summary = docs_resource(&client).await;
    assert!(
        summary["model"]
            .as_str()
            .unwrap()
            .starts_with("cls-minilm@"),
        "{summary:#}"
    );
    let leftovers: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".index"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn an_unknown_model_and_a_catalogue_model_offline_are_refused_and_nothing_is_made() {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().canonicalize().unwrap();
    let docs = root.join("docs");
    write_docs(&docs);
    let (index, data) = (root.join("index"), root.join("data"));
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let index_with = |model: &str| {
        drydock_command()
            .args(["index", "--model", model, "--index"])
            .arg(&index)
            .arg("--data-dir")
            .arg(&data)
            .arg(&docs)
            .env("HF_ENDPOINT", &endpoint)
            .output()
            .unwrap()
    };

    let unknown = index_with("no-such-model");
    let said = String::from_utf8_lossy(&unknown.stderr);
    assert!(!unknown.status.success(), "{unknown:?}");
    for expected in [
        "unknown embedding model `no-such-model`",
        "bge-small-en-v1.5",
        "nomic-embed-text-v1.5",
    ] {
        assert!(said.contains(expected), "{expected}: {said}");
    }

    let offline = index_with("bge-small-en-v1.5");
    let said = String::from_utf8_lossy(&offline.stderr);
    assert!(!offline.status.success(), "{offline:?}");
    for expected in [
        format!("{endpoint}/Xenova/bge-small-en-v1.5/resolve/main/onnx/model.onnx"),
        data.join("models/bge-small-en-v1.5").display().to_string(),
    ] {
        assert!(said.contains(&expected), "{expected}: {said}");
    }
    assert!(!index.exists(), "an index was made");
    let models: Vec<_> = std::fs::read_dir(data.join("models"))
        .map(|d| d.collect())
        .unwrap_or_default();
    assert!(models.is_empty(), "a failed fetch left {models:?}");
}
