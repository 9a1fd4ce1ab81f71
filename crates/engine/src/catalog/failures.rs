//! Failure rates of a cluster's parts, as interruptions of one synchronous training job:
//! `failures.yaml` beside this file, one profile per published observation, each naming its
//! source. A cause's rate is its count over the parts it scales with and the hours watched
//! (`count / (parts × hours)`); [`Profile::job_rates`] scales it to another cluster by that
//! cluster's count of the same part. Rates are given in FIT (failures per 10⁹ part-hours, the
//! reliability engineer's unit).

use std::sync::OnceLock;

use serde_json::Value;

use crate::error::{InputError, Result};

/// The part a cause's rate scales with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Per {
    Gpu,
    Server,
    Nic,
    /// One per job, whatever its size.
    Job,
}

impl Per {
    fn parse(s: &str) -> Option<Per> {
        Some(match s {
            "gpu" => Per::Gpu,
            "server" => Per::Server,
            "nic" => Per::Nic,
            "job" => Per::Job,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Per::Gpu => "gpu",
            Per::Server => "server",
            Per::Nic => "nic",
            Per::Job => "job",
        }
    }
}

/// What an interruption costs the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// A server goes to repair and a spare replaces it; then the job restarts from its last
    /// checkpoint.
    Swap,
    /// The job restarts on the same servers from its last checkpoint.
    Restart,
    /// A stop on purpose after a checkpoint is saved: no work lost.
    Planned,
}

impl Effect {
    pub fn parse(s: &str) -> Option<Effect> {
        Some(match s {
            "swap" => Effect::Swap,
            "restart" => Effect::Restart,
            "planned" => Effect::Planned,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Effect::Swap => "swap",
            Effect::Restart => "restart",
            Effect::Planned => "planned",
        }
    }
}

/// The parts of a cluster a job runs on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cluster {
    pub gpus: u64,
    pub servers: u64,
    pub nics: u64,
}

impl Cluster {
    /// `gpus` GPUs, `gpus_per_server` to a server (the last server may hold fewer),
    /// `nics_per_server` NICs each.
    pub fn new(gpus: u64, gpus_per_server: u64, nics_per_server: u64) -> Cluster {
        let servers = gpus.div_ceil(gpus_per_server.max(1));
        Cluster { gpus, servers, nics: servers * nics_per_server }
    }

    pub fn parts(&self, per: Per) -> u64 {
        match per {
            Per::Gpu => self.gpus,
            Per::Server => self.servers,
            Per::Nic => self.nics,
            Per::Job => 1,
        }
    }
}

/// One cause of interruptions.
#[derive(Debug, Clone, PartialEq)]
pub struct Cause {
    pub name: String,
    pub label: String,
    pub category: String,
    pub per: Per,
    pub effect: Effect,
    /// Interruptions per 10⁹ part-hours.
    pub fit: f64,
    /// Interruptions counted in the observation it comes from (None for a user's rate).
    pub count: Option<f64>,
}

/// A published observation: the cluster, how long, and its causes.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub name: String,
    pub source: String,
    pub observed: Cluster,
    pub days: f64,
    pub causes: Vec<Cause>,
}

pub const HOURS_PER_DAY: f64 = 24.0;
/// Failures in time: per 10⁹ part-hours.
pub const FIT_HOURS: f64 = 1e9;

const FAILURES: &str = include_str!("failures.yaml");

impl Profile {
    /// The shipped profiles, in file order.
    pub fn shipped() -> &'static [Profile] {
        static SHIPPED: OnceLock<Vec<Profile>> = OnceLock::new();
        SHIPPED.get_or_init(|| {
            super::entries(FAILURES)
                .into_iter()
                .map(|(name, v)| {
                    Profile::from_value(&name, &v).unwrap_or_else(|e| panic!("failures.yaml: {name}: {e}"))
                })
                .collect()
        })
    }

    /// A shipped profile by name, or an error naming `field` and the known names.
    pub fn named(name: &str, field: &str) -> Result<&'static Profile> {
        let all = Profile::shipped();
        all.iter().find(|p| p.name == name).ok_or_else(|| {
            let known: Vec<&str> = all.iter().map(|p| p.name.as_str()).collect();
            InputError::field(
                "command line",
                field,
                format!("unknown failure profile '{name}' (known: {})", known.join(", ")),
            )
        })
    }

    /// A profile of `failures.yaml`'s schema; the error names the field.
    pub fn from_value(name: &str, v: &Value) -> std::result::Result<Profile, String> {
        let number = |v: &Value, field: &str| {
            v.get(field)
                .and_then(Value::as_f64)
                .filter(|x| *x > 0.0 && x.is_finite())
                .ok_or_else(|| format!("{field}: must be a positive number, got {:?}", v.get(field)))
        };
        let text = |v: &Value, field: &str| v.get(field).and_then(Value::as_str).unwrap_or_default().to_string();
        let whole = |field: &str| number(v, field).map(|x| x as u64);
        let observed = Cluster::new(whole("gpus")?, whole("gpus_per_server")?, whole("nics_per_server")?);
        let days = number(v, "days")?;
        let hours = days * HOURS_PER_DAY;
        let Some(Value::Object(map)) = v.get("causes") else { return Err("causes: must be a mapping".into()) };
        let mut causes = Vec::new();
        for (cause, c) in map {
            let at = |m: String| format!("causes.{cause}.{m}");
            let count = c
                .get("count")
                .and_then(Value::as_f64)
                .filter(|x| *x >= 0.0 && x.is_finite())
                .ok_or_else(|| at("count: must be a number ≥ 0".into()))?;
            let per = Per::parse(&text(c, "per")).ok_or_else(|| at("per: must be gpu, server, nic or job".into()))?;
            let effect = Effect::parse(&text(c, "effect"))
                .ok_or_else(|| at("effect: must be swap, restart or planned".into()))?;
            causes.push(Cause {
                name: cause.clone(),
                label: text(c, "label"),
                category: text(c, "category"),
                per,
                effect,
                fit: count / (observed.parts(per) as f64 * hours) * FIT_HOURS,
                count: Some(count),
            });
        }
        // Most frequent first, as the paper's table lists them (the mapping's order is lost).
        causes.sort_by(|a, b| {
            b.count.unwrap_or(0.0).total_cmp(&a.count.unwrap_or(0.0)).then_with(|| a.name.cmp(&b.name))
        });
        Ok(Profile { name: name.to_string(), source: text(v, "source"), observed, days, causes })
    }

    /// Each cause's interruptions per hour for a job on `cluster`.
    pub fn job_rates(&self, cluster: &Cluster) -> Vec<f64> {
        self.causes.iter().map(|c| c.fit / FIT_HOURS * cluster.parts(c.per) as f64).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama3_profile_gives_back_its_counts_on_its_own_cluster() {
        let p = Profile::named("llama3-405b", "failures").unwrap();
        assert!(p.source.contains("Table 5"));
        assert_eq!(p.observed, Cluster { gpus: 16384, servers: 2048, nics: 16384 });
        let total: f64 = p.causes.iter().map(|c| c.count.unwrap()).sum();
        assert_eq!(total, 466.0);
        let unplanned: f64 = p.causes.iter().filter(|c| c.effect != Effect::Planned).map(|c| c.count.unwrap()).sum();
        assert_eq!(unplanned, 419.0);
        // Rates × parts × hours is the count again, cause by cause.
        let hours = 54.0 * 24.0;
        for (c, rate) in p.causes.iter().zip(p.job_rates(&p.observed)) {
            assert!((rate * hours - c.count.unwrap()).abs() < 1e-9, "{}", c.name);
        }
        // A faulty GPU: 148 in 16,384 GPUs × 1,296 h = 6,970 FIT.
        let gpu = &p.causes[0];
        assert_eq!(gpu.name, "faulty_gpu", "the most frequent cause comes first");
        assert!((gpu.fit - 148.0 / (16384.0 * 1296.0) * 1e9).abs() < 1e-6);
        // Half the cluster: per-part causes halve, the job's own (planned, dependency) do not.
        let half = Cluster::new(8192, 8, 8);
        let rates = p.job_rates(&half);
        let planned = p.causes.iter().position(|c| c.name == "planned_maintenance").unwrap();
        assert!((rates[planned] * hours - 47.0).abs() < 1e-9);
        assert!((rates[0] * hours - 74.0).abs() < 1e-9);
    }

    #[test]
    fn an_unknown_profile_and_a_bad_entry_name_the_field() {
        let e = Profile::named("llama9", "--failures").unwrap_err().to_string();
        assert_eq!(e, "command line: --failures: unknown failure profile 'llama9' (known: llama3-405b)");
        let v: Value = serde_json::json!({"gpus": 8, "gpus_per_server": 8, "nics_per_server": 1, "days": 1,
            "causes": {"gpu": {"count": -1, "per": "gpu", "effect": "swap"}}});
        assert_eq!(Profile::from_value("x", &v).unwrap_err(), "causes.gpu.count: must be a number ≥ 0");
        let v: Value = serde_json::json!({"gpus": 8, "gpus_per_server": 8, "nics_per_server": 1, "days": 1,
            "causes": {"gpu": {"count": 1, "per": "rack", "effect": "swap"}}});
        assert_eq!(Profile::from_value("x", &v).unwrap_err(), "causes.gpu.per: must be gpu, server, nic or job");
    }
}
