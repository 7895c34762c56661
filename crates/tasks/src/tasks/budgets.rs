//! What tasks' agents spent, counted against the tasks' budgets and the day's: the
//! part of the task system that reads the agents' records and holds new starts.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::files;
use super::isolation::Isolation;
use super::ledger::Ledger;
use super::spending::{AttemptSpent, Spending, place_key};
use super::store::{Queue, Task};
use crate::agents::Agents;
use crate::agents::usage::{self, Run};
use crate::config::Config;
use crate::spend::ByModel;

/// Counts what agents spent, and says which budgets hold new starts.
pub(super) struct Budgets {
    ledger: Arc<Ledger>,
    config: Arc<Config>,
    agents: Arc<Agents>,
}

impl Budgets {
    pub(super) fn new(ledger: Arc<Ledger>, config: Arc<Config>, agents: Arc<Agents>) -> Budgets {
        Budgets {
            ledger,
            config,
            agents,
        }
    }
}

impl Budgets {
    /// Counts what `run` (a task as one of its attempts ran) spent, by its agent's records,
    /// and keeps it as that attempt's in the task's spending as stored now (a retry may have
    /// changed its budget, or counted a later attempt, meanwhile); returns the spending kept.
    pub(super) async fn count_spending(&self, run: &Task) -> Spending {
        let counted = self.spent_by(run).await;
        let mut attempt = match counted {
            Ok(tokens) => AttemptSpent::counted(run.attempts, tokens, &self.config.prices),
            Err(why) => AttemptSpent::unknown(run.attempts, why),
        };
        attempt.started_at_ms = run.started_at_ms;
        let id = run.id.clone();
        let kept = async {
            let keep = move |q: &dyn Queue| {
                let now = q.get(&id)?;
                let mut spending = now.usage.clone().unwrap_or_default();
                spending.record(attempt);
                if now.usage.as_ref() != Some(&spending) {
                    q.set_usage(&id, &spending)?;
                }
                Ok(spending)
            };
            self.ledger.store().await?.call(keep).await
        };
        match kept.await {
            Ok(spending) => spending,
            Err(error) => {
                tracing::warn!("task {}: keeping what it spent: {error}", run.id);
                run.usage.clone().unwrap_or_default()
            }
        }
    }

    /// Why new starts wait for tomorrow (UTC): the queue's daily budget spent, and each
    /// project's, by the attempts that started today.
    pub(super) async fn daily_holds(&self) -> DailyHolds {
        let Ok(store) = self.ledger.store().await else {
            return DailyHolds::default();
        };
        let read = store.call(|q| {
            let budgets = q.daily_budgets()?;
            let tasks = match budgets.is_empty() {
                true => Vec::new(),
                false => q.list(None)?,
            };
            Ok((budgets, tasks))
        });
        let (budgets, tasks) = match read.await {
            Ok((budgets, tasks)) if !budgets.is_empty() => (budgets, tasks),
            _ => return DailyHolds::default(),
        };
        let today = day_of(crate::millis::unix_millis(std::time::SystemTime::now()));
        let mut team = Spending {
            budget: budgets.team,
            ..Spending::default()
        };
        let mut projects: BTreeMap<String, Spending> = budgets
            .projects
            .iter()
            .map(|(key, budget)| {
                let spending = Spending {
                    budget: Some(*budget),
                    ..Spending::default()
                };
                (key.clone(), spending)
            })
            .collect();
        for task in &tasks {
            let attempts = task.usage.iter().flat_map(|u| &u.attempts);
            for attempt in attempts.filter(|a| a.started_at_ms.map(day_of) == Some(today)) {
                team.attempts.push(attempt.clone());
                if let Some(project) = projects.get_mut(&project_key(task)) {
                    project.attempts.push(attempt.clone());
                }
            }
        }
        let held = |spending: &Spending| {
            let budget = spending.budget?;
            (spending.share_of_budget()? >= 1.0).then(|| {
                format!(
                    "spent {} today of a daily budget of {}: new starts wait for tomorrow (UTC)",
                    spending.spent_line(),
                    budget.line()
                )
            })
        };
        DailyHolds {
            team: held(&team),
            projects: projects
                .iter()
                .filter_map(|(key, spending)| Some((key.clone(), held(spending)?)))
                .collect(),
        }
    }

    /// This host's running tasks with a budget, each counted anew, and why each that
    /// reached its budget must stop.
    pub(super) async fn exhausted(&self) -> Vec<(Task, String)> {
        let mut exhausted = Vec::new();
        for task in self.ledger.running_tasks().await {
            if task.usage.as_ref().and_then(|u| u.budget).is_none() {
                continue;
            }
            if let Some(why) = self.count_spending(&task).await.exhausted() {
                exhausted.push((task, why));
            }
        }
        exhausted
    }

    async fn spent_by(&self, task: &Task) -> Result<ByModel, String> {
        let source = self
            .agents
            .profile(&task.agent_kind)
            .and_then(|profile| profile.usage.clone())
            .ok_or_else(|| format!("the {} profile names no records of usage", task.agent_kind))?;
        let person = dirs::home_dir().ok_or("no home folder")?;
        let sandboxed = task
            .isolation
            .as_ref()
            .and_then(Isolation::confinement)
            .is_some_and(|how| how.starts_with("bubblewrap"));
        let home = match sandboxed {
            true => files::task_dir(&self.config, &task.id).join("home"),
            false => person.clone(),
        };
        let cwd = match &task.isolation {
            Some(Isolation::Worktree(worktree)) => worktree.path().to_path_buf(),
            _ => PathBuf::from(&task.project_path),
        };
        let since_ms = task.started_at_ms.unwrap_or(0);
        tokio::task::spawn_blocking(move || {
            let run = Run {
                home: &home,
                home_inside: &person,
                cwd: &cwd,
                since_ms,
            };
            usage::spent(&source, &run, &|name| std::env::var(name).ok()).map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| e.to_string())?
    }
}

/// Why new starts wait: the queue's daily budget, and the projects' (by [`project_key`]).
#[derive(Debug, Default)]
pub(super) struct DailyHolds {
    pub team: Option<String>,
    pub projects: BTreeMap<String, String>,
}

impl DailyHolds {
    /// Why `task` may not start today, if it may not.
    pub(super) fn of(&self, task: &Task) -> Option<String> {
        if let Some(why) = &self.team {
            return Some(format!("the queue {why}"));
        }
        let key = project_key(task);
        self.projects
            .get(&key)
            .map(|why| format!("project {key} {why}"))
    }

    /// Each hold, as `queue_status` says it.
    pub(super) fn lines(&self) -> Vec<String> {
        let team = self.team.iter().map(|why| format!("the queue {why}"));
        let projects = self
            .projects
            .iter()
            .map(|(key, why)| format!("project {key} {why}"));
        team.chain(projects).collect()
    }
}

/// A project as every host of a queue names it: its place (the allowed root's name and the
/// path below it), or its path where it has none.
pub(super) fn project_key(task: &Task) -> String {
    match &task.place {
        Some(place) => place_key(place),
        None => task.project_path.clone(),
    }
}

/// The day (UTC, since the epoch) of `ms`.
fn day_of(ms: u64) -> u64 {
    ms / 86_400_000
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;
    use crate::millis::unix_millis;
    use crate::spend::{Budget, Tokens};
    use crate::tasks::parts_for_tests::Setting;
    use crate::tasks::spending::{AttemptSpent, DailyBudgets};

    fn budgets_of(setting: &Setting) -> (Arc<Ledger>, Budgets) {
        let ledger = setting.ledger();
        let budgets = Budgets::new(ledger.clone(), setting.config.clone(), setting.agents());
        (ledger, budgets)
    }

    fn spent_today(
        attempt: u32,
        tokens: u64,
        prices: &crate::config::prices::Prices,
    ) -> AttemptSpent {
        let used = ByModel::from([(
            "claude-opus-5-5".to_string(),
            Tokens {
                input: tokens,
                ..Tokens::default()
            },
        )]);
        AttemptSpent {
            started_at_ms: Some(unix_millis(SystemTime::now())),
            ..AttemptSpent::counted(attempt, used, prices)
        }
    }

    /// Built alone: with no daily budget nothing holds; once the attempts that started
    /// today spent the queue's, every task waits for tomorrow, and says so.
    #[tokio::test]
    async fn the_days_spending_holds_new_starts_once_it_reaches_the_daily_budget() {
        let setting = Setting::new("");
        let (ledger, budgets) = budgets_of(&setting);
        let task = setting.queued_task("tidy the imports");
        assert!(budgets.daily_holds().await.of(&task).is_none());

        let daily = DailyBudgets {
            team: Some(Budget::checked(Some(1_000), None, "daily_budget").unwrap()),
            ..DailyBudgets::default()
        };
        let mut spending = Spending::default();
        spending.record(spent_today(1, 600, &setting.config.prices));
        let id = task.id.clone();
        let kept = spending.clone();
        ledger
            .persistently(move |q| {
                q.set_daily_budgets(&daily)?;
                q.set_usage(&id, &kept)
            })
            .await
            .unwrap();
        assert!(
            budgets.daily_holds().await.of(&task).is_none(),
            "600 of 1,000"
        );

        spending.record(spent_today(2, 500, &setting.config.prices));
        let id = task.id.clone();
        ledger
            .persistently(move |q| q.set_usage(&id, &spending))
            .await
            .unwrap();
        let holds = budgets.daily_holds().await;
        let why = holds.of(&task).expect("1,100 of 1,000 holds it");
        assert!(why.starts_with("the queue spent 1,100 tokens"), "{why}");
        assert!(why.ends_with("new starts wait for tomorrow (UTC)"), "{why}");
        assert_eq!(holds.lines(), vec![why]);
    }
}
