//! Tuning the route between two hosts (`nf tune --route HOST0,HOST1`): which network transport should carry which message
//! sizes between two hosts (`NF_NET_ROUTE`, see `nf_core::netroute`), measured and
//! cached for the other host.
//!
//! 1. Each transport (`tcp`, and `ofi` when libfabric is there) runs a ping-pong
//!    between one rank on each host over [`SIZES`], in child jobs alternating over
//!    `--rounds`; a job whose route is not the one asked for (ofi failed to open on a
//!    host, say) is an error naming both.
//! 2. The candidate ([`candidate`]): per size the faster transport; one transport if
//!    it wins every size, else a split at the size from which the winner of the
//!    largest size wins every larger one.
//! 3. A candidate other than the default for the provider must win again, in new
//!    jobs against the default alone, by `CONFIRM` (as every knob must), or the
//!    default is cached.
//! 4. The choice is cached under the other host's identity as its rank reported it
//!    (`NF_HOST`, or host name and boot id): the route of a later job is what rank
//!    0's host cached for the job's other hosts, when they agree.

use std::net::SocketAddr;

use nf_core::netroute::{NetRoute, Wire};
use nf_core::tune::Tuned;
use nf_launch::{HostSlots, Hosts, RemoteTemplate};

use super::jobs::{medians, Env, Jobs};
use super::pick::score;
use super::probe::{PEER_HOST, ROUTE};
use super::{TuneError, CONFIRM};

/// Message sizes measured, bytes: latency-bound to bandwidth-bound.
pub const SIZES: [usize; 7] = [8, 1 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20];

/// The two hosts of the measuring jobs, one rank each.
pub fn hosts(
    names: &[String],
    remote: &str,
    pmi_bind: Option<SocketAddr>,
) -> Result<Hosts, TuneError> {
    let [a, b] = names else {
        return Err(TuneError::RouteHosts);
    };
    Ok(Hosts {
        hosts: [a, b]
            .map(|h| HostSlots {
                name: h.clone(),
                ranks: 1,
            })
            .to_vec(),
        remote: std::sync::Arc::new(RemoteTemplate::parse(remote)?),
        pmi_bind,
    })
}

/// What steps 1–3 measured and chose.
pub struct RouteChoice {
    /// The transports measured alone in step 1, and their medians per size of [`SIZES`].
    pub measured: Vec<(NetRoute, Vec<f64>)>,
    /// The default for the provider and the candidate with their medians in the
    /// confirmation (step 3), when the candidate was not the default.
    pub confirmation: Option<[(NetRoute, Vec<f64>); 2]>,
    /// The candidate's score over the default's in the confirmation.
    pub ratio: Option<f64>,
    /// The candidate of step 2.
    pub candidate: NetRoute,
    /// The route chosen: the candidate if it is the default or was confirmed.
    pub chosen: NetRoute,
    /// The default for the provider.
    pub default: NetRoute,
    /// The other host's identity, under which the choice is cached.
    pub peer: String,
    /// Why ofi was not measured, if it was not.
    pub ofi_unavailable: Option<String>,
}

/// Runs steps 1–3 over `rounds` alternating rounds: the choice, not yet cached.
pub fn choose(jobs: &mut Jobs, rounds: usize) -> Result<RouteChoice, TuneError> {
    let provider = std::env::var("NF_OFI_PROVIDER").unwrap_or_else(|_| "tcp".into());
    let default = NetRoute::default_for(&provider);
    let mut ways = vec![Wire::Tcp];
    let ofi_unavailable = match nf_transport::ofi::available() {
        Ok(_) => {
            ways.push(Wire::Ofi);
            None
        }
        Err(e) => Some(e.to_string()),
    };
    let routes: Vec<NetRoute> = ways.iter().map(|&w| NetRoute::single(w)).collect();
    let (times, peer) = measure(jobs, &routes, rounds)?;
    let pick = if ways.len() == 2 {
        candidate(&times[0], &times[1])
    } else {
        NetRoute::single(Wire::Tcp)
    };
    let mut choice = RouteChoice {
        measured: routes.into_iter().zip(times).collect(),
        confirmation: None,
        ratio: None,
        candidate: pick,
        chosen: pick,
        default,
        peer,
        ofi_unavailable,
    };
    if pick != default {
        let (mut t, _) = measure(jobs, &[default, pick], rounds)?;
        let r = score(&t[1]) / score(&t[0]);
        let value = t.pop().unwrap_or_default();
        let dflt = t.pop().unwrap_or_default();
        choice.confirmation = Some([(default, dflt), (pick, value)]);
        choice.ratio = Some(r);
        if r > CONFIRM {
            choice.chosen = default;
        }
    }
    Ok(choice)
}

/// The cache entry of a choice: the chosen route under the other host's identity.
pub fn cached(choice: &RouteChoice) -> Tuned {
    let mut found = Tuned::default();
    found
        .net_route
        .insert(choice.peer.clone(), choice.chosen.to_string());
    found
}

/// Medians per route and size over `--rounds` alternating rounds, and the other host's
/// identity.
fn measure(
    jobs: &mut Jobs,
    routes: &[NetRoute],
    rounds: usize,
) -> Result<(Vec<Vec<f64>>, String), TuneError> {
    let cases: Vec<(String, Env)> = routes
        .iter()
        .map(|r| {
            let env = vec![
                ("NF_TRANSPORTS".into(), "shm,tcp,ofi".into()),
                ("NF_NET_ROUTE".into(), r.to_string()),
            ];
            (format!("route NF_NET_ROUTE={r}"), env)
        })
        .collect();
    let reports = jobs.alternate(&cases, &SIZES, rounds, |i, what, r| {
        let got = r
            .params
            .get(ROUTE)
            .and_then(|v| v.as_str())
            .unwrap_or("none");
        if got != routes[i].to_string() {
            return Err(TuneError::WrongRoute {
                what: what.into(),
                got: got.into(),
            });
        }
        Ok(())
    })?;
    let peer = reports
        .iter()
        .flatten()
        .find_map(|r| r.params.get(PEER_HOST).and_then(|v| v.as_str()))
        .filter(|p| !p.is_empty())
        .ok_or(TuneError::NoPeerHost)?
        .to_owned();
    let times = reports.iter().map(|r| medians(r, &SIZES)).collect();
    Ok((times, peer))
}

/// Step 2: the route from the per-size medians of tcp and of ofi (µs, over [`SIZES`]).
pub fn candidate(tcp: &[f64], ofi: &[f64]) -> NetRoute {
    let winner: Vec<Wire> = tcp
        .iter()
        .zip(ofi)
        .map(|(t, o)| if t <= o { Wire::Tcp } else { Wire::Ofi })
        .collect();
    let Some(&large) = winner.last() else {
        return NetRoute::single(Wire::Tcp);
    };
    // The first size from which `large` wins every larger one.
    let from = winner
        .iter()
        .rposition(|&w| w != large)
        .map_or(0, |i| i + 1);
    if from == 0 {
        return NetRoute::single(large);
    }
    NetRoute {
        small: large.other(),
        large,
        from: SIZES[from],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_candidate_splits_where_the_large_sizes_winner_starts_winning() {
        let t = [10.0, 12.0, 30.0, 80.0, 200.0, 700.0, 2500.0];
        let faster = t.map(|x| x * 0.5);
        let slower = t.map(|x| x * 2.0);
        assert_eq!(candidate(&t, &slower), NetRoute::single(Wire::Tcp));
        assert_eq!(candidate(&t, &faster), NetRoute::single(Wire::Ofi));
        // ofi wins from 64 KiB on (one noisy small size won by ofi does not matter).
        let mixed = [11.0, 11.0, 31.0, 70.0, 150.0, 500.0, 2000.0];
        let mut noisy = mixed;
        noisy[1] = 11.5;
        let want = NetRoute {
            small: Wire::Tcp,
            large: Wire::Ofi,
            from: 64 << 10,
        };
        assert_eq!(candidate(&t, &mixed), want);
        assert_eq!(candidate(&t, &noisy), want);
        // And the reverse.
        assert_eq!(candidate(&mixed, &t).to_string(), "ofi/tcp@65536");
    }
}
