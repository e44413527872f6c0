//! `nf tune --route HOST0,HOST1`: which network transport should carry which message
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

use anyhow::Context;
use nf_core::netroute::{NetRoute, Wire};
use nf_core::tune::Tuned;
use nf_launch::{HostSlots, Hosts, RemoteTemplate};

use super::jobs::{medians, Env, Jobs};
use super::pick::score;
use super::probe::{PEER_HOST, ROUTE};
use super::{cache, TuneArgs, CONFIRM};

/// Message sizes measured, bytes: latency-bound to bandwidth-bound.
pub const SIZES: [usize; 7] = [8, 1 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20];

/// The two hosts of the measuring jobs, one rank each.
pub fn hosts(
    names: &[String],
    remote: &str,
    pmi_bind: Option<SocketAddr>,
) -> anyhow::Result<Hosts> {
    let [a, b] = names else {
        anyhow::bail!(crate::cmd::Usage(
            "--route takes two hosts, this one first: --route HOST0,HOST1".into()
        ));
    };
    Ok(Hosts {
        hosts: [a, b]
            .map(|h| HostSlots {
                name: h.clone(),
                ranks: 1,
            })
            .to_vec(),
        remote: RemoteTemplate::parse(remote)?,
        pmi_bind,
    })
}

/// Runs steps 1–4.
pub fn tune(a: &TuneArgs, jobs: &mut Jobs) -> anyhow::Result<i32> {
    let provider = std::env::var("NF_OFI_PROVIDER").unwrap_or_else(|_| "tcp".into());
    let default = NetRoute::default_for(&provider);
    let mut ways = vec![Wire::Tcp];
    match nf_transport::ofi::available() {
        Ok(_) => ways.push(Wire::Ofi),
        Err(e) => println!("route: ofi is unavailable here ({e}); measuring tcp alone"),
    }
    let routes: Vec<NetRoute> = ways.iter().map(|&w| NetRoute::single(w)).collect();
    let (times, peer) = measure(a, jobs, &routes)?;
    print_table(&routes, &times);
    let pick = if ways.len() == 2 {
        candidate(&times[0], &times[1])
    } else {
        NetRoute::single(Wire::Tcp)
    };
    let chosen = if pick == default {
        pick
    } else {
        let (t, _) = measure(a, jobs, &[default, pick])?;
        let r = score(&t[1]) / score(&t[0]);
        print_table(&[default, pick], &t);
        if r <= CONFIRM {
            println!("confirmed: NF_NET_ROUTE={pick} at {r:.3}× the default's ({default}) time");
            pick
        } else {
            println!(
                "not confirmed: NF_NET_ROUTE={pick} at {r:.3}× the default's ({default}) time \
                 in new jobs (it must be ≤ {CONFIRM}); keeping the default"
            );
            default
        }
    };
    println!("choice: route to {peer}: NF_NET_ROUTE={chosen}");
    if a.dry_run {
        println!("dry run: nothing cached");
    } else {
        let mut found = Tuned::default();
        found.net_route.insert(peer, chosen.to_string());
        cache(&found)?;
    }
    Ok(0)
}

/// Medians per route and size over `--rounds` alternating rounds, and the other host's
/// identity.
fn measure(
    a: &TuneArgs,
    jobs: &mut Jobs,
    routes: &[NetRoute],
) -> anyhow::Result<(Vec<Vec<f64>>, String)> {
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
    let reports = jobs.alternate(&cases, &SIZES, a.rounds(), |i, what, r| {
        let got = r
            .params
            .get(ROUTE)
            .and_then(|v| v.as_str())
            .unwrap_or("none");
        if got != routes[i].to_string() {
            anyhow::bail!(
                "nf tune: {what} ran over {got}: a host could not use a transport it \
                 names (see the job's warnings above)"
            );
        }
        Ok(())
    })?;
    let peer = reports
        .iter()
        .flatten()
        .find_map(|r| r.params.get(PEER_HOST).and_then(|v| v.as_str()))
        .filter(|p| !p.is_empty())
        .context("the measuring job did not say which host its rank 1 ran on")?
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

fn print_table(routes: &[NetRoute], times: &[Vec<f64>]) {
    println!("route (NF_NET_ROUTE), median half round trip µs:");
    let mut head = format!("{:>16}", "route");
    for s in SIZES {
        head.push_str(&format!(" {:>9}", format!("{s} B")));
    }
    println!("{head} {:>9}", "score");
    for (r, t) in routes.iter().zip(times) {
        let mut line = format!("{:>16}", r.to_string());
        for x in t {
            line.push_str(&format!(" {x:>9.2}"));
        }
        println!("{line} {:>9.2}", score(t));
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
