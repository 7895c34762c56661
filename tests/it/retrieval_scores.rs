//! Retrieval scores over ranked results (rank from 1): Hit@1, Hit@5, Hit@10, MRR@10, and
//! the share answered anywhere among the results returned. Shared by the docs eval test and the whole-toolchain quality benchmark.

/// Collapses whitespace runs, so a phrase matches across line breaks.
pub fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[derive(Debug, Default, Clone)]
pub struct Scores {
    pub hit1: usize,
    pub hit5: usize,
    pub hit10: usize,
    /// Answered anywhere among the results.
    pub returned: usize,
    reciprocal_ranks: f64,
    pub count: usize,
}

impl Scores {
    /// One question: the rank of its first answering result, if any.
    pub fn add(&mut self, rank: Option<usize>) {
        self.count += 1;
        if let Some(rank) = rank {
            self.hit1 += usize::from(rank == 1);
            self.hit5 += usize::from(rank <= 5);
            self.hit10 += usize::from(rank <= 10);
            self.returned += 1;
            if rank <= 10 {
                self.reciprocal_ranks += 1.0 / rank as f64;
            }
        }
    }

    pub fn mrr(&self) -> f64 {
        self.reciprocal_ranks / self.count.max(1) as f64
    }

    pub fn line(&self) -> String {
        let n = self.count.max(1) as f64;
        format!(
            "Hit@1 {:.3}  Hit@5 {:.3}  Hit@10 {:.3}  MRR@10 {:.3}  returned {:.3}",
            self.hit1 as f64 / n,
            self.hit5 as f64 / n,
            self.hit10 as f64 / n,
            self.mrr(),
            self.returned as f64 / n
        )
    }
}
