//! `nf tune --route HOST0,HOST1`: the route's tables and choice, printed (the
//! measuring and choosing is [`nf_bench::tune::route`]).

use nf_bench::tune::jobs::Jobs;
use nf_bench::tune::pick::score;
use nf_bench::tune::route::{self, SIZES};
use nf_bench::tune::CONFIRM;
use nf_core::netroute::NetRoute;

use super::{cache, TuneArgs};

/// Measures, prints and caches the route.
pub fn tune(a: &TuneArgs, jobs: &mut Jobs) -> anyhow::Result<i32> {
    let c = route::choose(jobs, a.rounds())?;
    if let Some(why) = &c.ofi_unavailable {
        println!("route: ofi is unavailable here ({why}); measuring tcp alone");
    }
    let (routes, times): (Vec<NetRoute>, Vec<Vec<f64>>) = c.measured.iter().cloned().unzip();
    print_table(&routes, &times);
    if let (Some([d, p]), Some(r)) = (&c.confirmation, c.ratio) {
        print_table(&[d.0, p.0], &[d.1.clone(), p.1.clone()]);
        let (pick, default) = (c.candidate, c.default);
        if c.chosen == pick {
            println!("confirmed: NF_NET_ROUTE={pick} at {r:.3}× the default's ({default}) time");
        } else {
            println!(
                "not confirmed: NF_NET_ROUTE={pick} at {r:.3}× the default's ({default}) time \
                 in new jobs (it must be ≤ {CONFIRM}); keeping the default"
            );
        }
    }
    println!("choice: route to {}: NF_NET_ROUTE={}", c.peer, c.chosen);
    if a.dry_run {
        println!("dry run: nothing cached");
    } else {
        cache(&route::cached(&c))?;
    }
    Ok(0)
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
