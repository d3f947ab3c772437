//! Contract checks for flight records (`jobwheel_log_flight`, docs/replay.md): stored by one
//! admin and read by the other as stored (the module's digest round-trips through its 32
//! bytes), a resent record written over its row, a job's recorded runs newest first with their
//! trigger times, and deleted with their logs (a clear, the job's deletion).

use anyhow::ensure;

use jobwheel_admin::store::{FlightRow, GroupId, LogClear, NewLog};

use crate::store::{Admins, at, job};

pub(crate) async fn check(Admins { a, b }: &Admins, g: GroupId) -> anyhow::Result<()> {
    let job_id = a.add_job(&job(g, "recorded runs")).await?;
    let mut rows = Vec::new();
    for second in 0..3 {
        let trigger_time = at(&format!("2030-03-01T00:00:0{second}Z"));
        let log_id = a.insert_log(&NewLog { job_group: g, job_id, trigger_time }).await?;
        rows.push(FlightRow {
            log_id,
            module: format!("{second:02x}").repeat(32),
            replayable: second != 1,
            reason: (second == 1).then(|| "over the cap".to_owned()),
            record_bytes: 100 + second,
            // Not valid UTF-8 on purpose: the body is bytes.
            body: vec![0xff, 0x00, u8::try_from(second)?, 0xfe],
        });
    }
    a.put_flights(&rows).await?;
    a.put_flights(&[]).await?;
    for row in &rows {
        let read = b.flight(row.log_id).await?;
        ensure!(read.as_ref() == Some(row), "{read:?} != {row:?}");
    }
    // A resent callback writes its record again.
    let resent = FlightRow { record_bytes: 7, body: vec![1, 2, 3], ..rows[0].clone() };
    b.put_flights(std::slice::from_ref(&resent)).await?;
    ensure!(a.flight(rows[0].log_id).await?.as_ref() == Some(&resent));
    let unrecorded =
        a.insert_log(&NewLog { job_group: g, job_id, trigger_time: at("2030-03-01T00:00:09Z") }).await?;
    let newest = a.job_flights(job_id, 2).await?;
    let expected = [rows[2].log_id, rows[1].log_id].map(|id| (id, 0));
    ensure!(
        newest.iter().map(|(id, _)| (*id, 0)).collect::<Vec<_>>() == expected,
        "a run without a record is not among them: {newest:?}"
    );
    ensure!(newest[0].1 == at("2030-03-01T00:00:02Z").timestamp_millis(), "{newest:?}");
    ensure!(unrecorded.0 > rows[2].log_id.0);

    // Deleted with their logs: a clear by time, then the job.
    let clear = LogClear {
        job_group: Some(g),
        job_id: Some(job_id),
        trigger_before: Some(at("2030-03-01T00:00:00Z")),
        keep_newest: 0,
    };
    ensure!(a.clear_logs(&clear).await? == 1);
    ensure!(b.flight(rows[0].log_id).await?.is_none(), "gone with its log");
    ensure!(b.flight(rows[1].log_id).await?.is_some());
    ensure!(a.delete_job(job_id).await?);
    ensure!(
        b.flight(rows[1].log_id).await?.is_none() && b.flight(rows[2].log_id).await?.is_none(),
        "gone with the job"
    );
    Ok(())
}
