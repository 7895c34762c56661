//! Prompts that teach the build workflows.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{PromptMessage, Role};
use rmcp::{prompt, prompt_router};
use schemars::JsonSchema;
use serde::Deserialize;

use super::DrydockServer;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ProjectArgs {
    /// The project directory.
    pub project_path: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct FailingTestArgs {
    /// The project directory.
    pub project_path: String,
    /// Name (or part of the name) of the failing test.
    pub test: String,
}

#[prompt_router(vis = "pub(crate)")]
impl DrydockServer {
    #[prompt(
        name = "fix_build",
        description = "Make a project build cleanly: read exact errors with type_check, fix them, repeat, then run the tests."
    )]
    async fn fix_build(&self, Parameters(args): Parameters<ProjectArgs>) -> Vec<PromptMessage> {
        let path = args.project_path;
        vec![PromptMessage::new_text(
            Role::User,
            format!(
                "Make the project at `{path}` build without errors.\n\
                 1. Call `type_check` with project_path `{path}`. Its `errors` list each problem with file, line, column, code and message; `label` says what is wrong at that spot and `suggestions` are edits the compiler is sure of.\n\
                 2. Fix the errors in the order given (earlier errors often cause later ones). Apply machine-applicable suggestions as they are.\n\
                 3. Call `type_check` again; repeat until `status` is \"ok\". Then look at `warnings`.\n\
                 4. Call `test` with the same project_path and fix what fails (each failure has file, line, message and left/right values).\n\
                 5. Finish with `lint` and `format` (apply=true)."
            ),
        )]
    }

    #[prompt(
        name = "fix_failing_test",
        description = "Investigate and fix one failing test using test (with a filter) and the failure's location and values."
    )]
    async fn fix_failing_test(
        &self,
        Parameters(args): Parameters<FailingTestArgs>,
    ) -> Vec<PromptMessage> {
        let FailingTestArgs { project_path, test } = args;
        vec![PromptMessage::new_text(
            Role::User,
            format!(
                "The test `{test}` fails in `{project_path}`.\n\
                 1. Call `test` with project_path `{project_path}` and filter `{test}` to run only it.\n\
                 2. Read the failure: `file` and `line` point at the panic, `message` says why, `left`/`right` are the compared values, `stdout` is what the test printed.\n\
                 3. Decide whether the code or the test is wrong, fix it, and run the same call until it passes.\n\
                 4. Run `test` without a filter to check that nothing else broke."
            ),
        )]
    }
}
