//! `bat run` over MPI ranks (`mpirun -n R bat run ...`, `srun bat run
//! ...`): every rank samples chains with the usual executor, groups of them
//! handed out by rank 0 as ranks ask ([`ChainQueue`]; with `--backend
//! cuda`, which runs all its chains at once, an equal share each,
//! [`share`]); rank 0 also writes the one draws file, its collector fed
//! by its own executor and by the other ranks' events, which they send in
//! messages ([`bat::sampler::wire`]) every 50 ms or 1 MiB (`SEND_EVERY`,
//! `SEND_BYTES`). Before sampling, the ranks agree twice — on the command
//! line (each parses it; rank 0 compares) and on the setup (the model,
//! data and executor) — so that a bad argument or a failure on any rank
//! stops every rank with one message from rank 0, never a hang. Rank 0
//! ends the run by sending its exit status to the others.
//!
//! Only the main thread of a rank calls MPI, and every wait is a poll
//! with a sleep: MPI's blocking calls spin, which would take a core from
//! the sampler threads.

pub use bat::sampler::wire::{ChainQueue, share};

/// The environment variables by which launchers tell a process it is one
/// of several, (size, rank), in the order they are trusted: OpenMPI's
/// mpirun, PMI (MPICH's Hydra, Slurm's srun with PMI-2), Slurm's srun
/// (any MPI plugin, or none).
const LAUNCH_VARS: [(&str, &str); 3] = [
    ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"),
    ("PMI_SIZE", "PMI_RANK"),
    ("SLURM_STEP_NUM_TASKS", "SLURM_PROCID"),
];

/// This process was started by a launcher as one of `size` > 1
/// processes: (size, rank). The first pair of variables present decides.
pub fn launched() -> Option<(usize, usize)> {
    let (size, rank) = LAUNCH_VARS
        .iter()
        .find(|(size, _)| std::env::var_os(size).is_some())?;
    let size: usize = std::env::var(size).ok()?.trim().parse().ok()?;
    let rank: usize = std::env::var(rank).ok()?.trim().parse().ok()?;
    (size > 1).then_some((size, rank))
}

/// Developer switch (`BAT_RANK_TIMES=1`): at the end of `bat run` each
/// rank prints on stderr where its CPU time went, the figures of
/// docs/mpi.md's scaling estimate.
pub fn times_requested() -> bool {
    std::env::var_os("BAT_RANK_TIMES").is_some_and(|v| v == "1")
}

/// CPU seconds (user + system) of this process (`/proc/self/stat`: every
/// thread it ever ran) or of the calling thread (`/proc/thread-self/stat`).
pub fn cpu_seconds(whole_process: bool) -> f64 {
    let path = if whole_process {
        "/proc/self/stat"
    } else {
        "/proc/thread-self/stat"
    };
    let stat = std::fs::read_to_string(path).unwrap_or_default();
    // Fields after the command name: state is the first, utime the 12th.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    // USER_HZ is 100 on Linux.
    ticks(11)
        .zip(ticks(12))
        .map_or(f64::NAN, |(u, s)| (u + s) / 100.0)
}

/// CPU seconds of this process and of the calling thread when sampling
/// starts.
pub struct CpuAtStart(f64, f64);

impl CpuAtStart {
    pub fn now() -> CpuAtStart {
        CpuAtStart(cpu_seconds(true), cpu_seconds(false))
    }

    /// The line of [`times_requested`]: sampling wall seconds; CPU
    /// seconds since sampling started of the collector thread (rank 0), of
    /// this thread (MPI's: receiving or sending events; the collector in
    /// one process) and of the rest (the sampler threads); event bytes
    /// sent or received.
    pub fn print(&self, ranks: &Ranks, wall: f64, collector: f64, bytes: u64) {
        let total = cpu_seconds(true) - self.0;
        let main = cpu_seconds(false) - self.1;
        eprintln!(
            "rank {} of {}: sampling {wall:.2} s wall; CPU s: collector {collector:.2}, main thread {main:.2}, samplers {:.2}; event bytes {bytes}",
            ranks.rank(),
            ranks.size(),
            total - main - collector,
        );
    }
}

/// The processes of a run: this one alone, or the MPI world.
pub enum Ranks {
    Single,
    #[cfg(feature = "mpi")]
    World(world::World),
}

impl Ranks {
    pub fn rank(&self) -> usize {
        match self {
            Ranks::Single => 0,
            #[cfg(feature = "mpi")]
            Ranks::World(w) => w.rank,
        }
    }

    pub fn size(&self) -> usize {
        match self {
            Ranks::Single => 1,
            #[cfg(feature = "mpi")]
            Ranks::World(w) => w.size,
        }
    }
}

#[cfg(feature = "mpi")]
pub mod world {
    use bat::sampler::Event;
    use bat::sampler::wire::{ChainQueue, Decoder, Encoder};
    use mpi::Threading;
    use mpi::datatype::Equivalence;
    use mpi::environment::Universe;
    use mpi::point_to_point::{Destination, Message, Source, Status};
    use mpi::topology::{Communicator, SimpleCommunicator};
    use std::io::{Read, Seek, Write};
    use std::ops::Range;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
    use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
    use std::time::{Duration, Instant};

    /// A rank sends its events at least this often...
    pub const SEND_EVERY: Duration = Duration::from_millis(50);
    /// ...or once it has this many bytes of them.
    pub const SEND_BYTES: usize = 1 << 20;
    /// How long rank 0 waits, once told to stop, for the other ranks' last
    /// events before it names those that did not send them.
    pub const GRACE: Duration = Duration::from_millis(300);
    /// How long a rank sleeps between polls for a message.
    const POLL: Duration = Duration::from_millis(1);
    /// How long a rank sending a message sleeps between polls: a long
    /// message moves only while the sender calls MPI (in fragments; the
    /// receiver waits for them spinning), so the sender polls often.
    const SEND_POLL: Duration = Duration::from_micros(20);

    /// Events; an empty message is a rank's last. One tag, so that the
    /// last cannot overtake the events before it (MPI keeps the order of
    /// the messages of one sender and tag).
    const EVENTS: i32 = 1;
    const READY: i32 = 3;
    const GO: i32 = 4;
    const EXIT: i32 = 5;
    /// Rank 0 to the others: stop the chains (the collector found the
    /// draws enough, or rank 0 was interrupted).
    const STOP_CHAINS: i32 = 6;
    /// How often a rank but 0 looks for [`STOP_CHAINS`].
    const STOP_POLL: Duration = Duration::from_millis(10);
    /// A rank asks rank 0 for chains (how many it runs at once)...
    const WANT: i32 = 7;
    /// ...and gets a group (first and end chain), or none when all are
    /// handed out (an empty message).
    const GRANT: i32 = 8;

    /// How a rank but 0 gets its chains from rank 0: its executor's thread
    /// says on `wants` that it wants a group and waits for it on `groups`
    /// (which closes once every chain is handed out).
    pub struct Asking {
        pub wants: Receiver<()>,
        pub groups: Sender<Range<usize>>,
        /// The chains the rank runs at once (its threads' lanes).
        pub at_once: usize,
    }

    pub struct World {
        pub rank: usize,
        pub size: usize,
        comm: SimpleCommunicator,
        // Last: MPI_Finalize when dropped.
        _universe: Universe,
    }

    impl World {
        /// Initializes MPI (the main thread alone calls it).
        pub fn init() -> Result<World, String> {
            let (universe, _) = mpi::initialize_with_threading(Threading::Funneled)
                .ok_or("MPI was initialized already")?;
            let comm = universe.world();
            Ok(World {
                rank: comm.rank() as usize,
                size: comm.size() as usize,
                comm,
                _universe: universe,
            })
        }

        /// Sends `bytes` to `rank`, polling (not spinning) until sent.
        pub fn send(&self, rank: usize, tag: i32, bytes: &[u8]) {
            let process = self.comm.process_at_rank(rank as i32);
            mpi::request::scope(|scope| {
                wait_polling(process.immediate_send_with_tag(scope, bytes, tag));
            });
        }

        /// The next message tagged `tag` from any rank: (its rank, bytes).
        fn receive(&self, tag: i32) -> (usize, Vec<u8>) {
            loop {
                if let Some(probed) = self
                    .comm
                    .any_process()
                    .immediate_matched_probe_with_tag(tag)
                {
                    return (probed.1.source_rank() as usize, receive_probed(probed));
                }
                std::thread::sleep(POLL);
            }
        }

        /// One step's verdict: every rank but 0 sends `mine` (what it says
        /// of the step) and rank 0 `decide`s from theirs (by rank, in
        /// order) whether all go on, with a payload (the seed, an exit
        /// status) for all; every rank returns the verdict.
        pub fn agree(
            &self,
            mine: &[u8],
            decide: impl FnOnce(Vec<(usize, Vec<u8>)>) -> (bool, Vec<u8>),
        ) -> (bool, Vec<u8>) {
            if self.rank != 0 {
                self.send(0, READY, mine);
                let verdict = self.receive_from_zero(GO);
                return match verdict.split_first() {
                    Some((&go, payload)) => (go == 1, payload.to_vec()),
                    None => (false, Vec::new()),
                };
            }
            let mut theirs = Vec::with_capacity(self.size - 1);
            while theirs.len() + 1 < self.size {
                theirs.push(self.receive(READY));
            }
            theirs.sort();
            let (go, payload) = decide(theirs);
            let mut message = vec![u8::from(go)];
            message.extend_from_slice(&payload);
            for rank in 1..self.size {
                self.send(rank, GO, &message);
            }
            (go, payload)
        }

        fn receive_from_zero(&self, tag: i32) -> Vec<u8> {
            loop {
                if let Some(bytes) = self.try_receive_from_zero(tag) {
                    return bytes;
                }
                std::thread::sleep(POLL);
            }
        }

        /// The next message tagged `tag` from any rank, if one is there.
        fn try_receive(&self, tag: i32) -> Option<(usize, Vec<u8>)> {
            let probed = self
                .comm
                .any_process()
                .immediate_matched_probe_with_tag(tag)?;
            Some((probed.1.source_rank() as usize, receive_probed(probed)))
        }

        /// Rank 0: every other rank's events into `events` until each has
        /// sent its last; the first malformed message is an error. Once
        /// `stop` is set (Ctrl-C, or the launcher ending the job because a
        /// rank died), rank 0 names the ranks that have not sent their
        /// last within [`GRACE`], and goes on waiting: a rank that died
        /// never sends it, and the launcher ends rank 0 too, the file
        /// holding every block written so far.
        ///
        /// With a `queue`, rank 0 also hands out its chains to the ranks
        /// that ask for them.
        pub fn receive_events(
            &self,
            events: Sender<Event>,
            stop: &AtomicBool,
            queue: Option<&ChainQueue>,
        ) -> Result<u64, String> {
            let mut decoders: Vec<Decoder> = (0..self.size).map(Decoder::new).collect();
            let mut running: Vec<bool> = (0..self.size).map(|rank| rank != 0).collect();
            let mut stopped: Option<Instant> = None;
            let mut named = false;
            let mut received = 0;
            let mut told = false;
            while running.contains(&true) {
                // The collector stops the chains it sees with `stop`
                // (target reached); the other ranks' chains are told so.
                // Ranks whose last events came need not be.
                if !told && stop.load(Ordering::SeqCst) {
                    told = true;
                    for rank in (1..self.size).filter(|&r| running[r]) {
                        self.send(rank, STOP_CHAINS, &[]);
                    }
                }
                if let Some(queue) = queue {
                    while let Some((rank, want)) = self.try_receive(WANT) {
                        let at_once = want.try_into().map_or(1, u64::from_le_bytes);
                        let grant = queue.take(at_once as usize).map_or(Vec::new(), |g| {
                            [g.start as u64, g.end as u64]
                                .iter()
                                .flat_map(|x| x.to_le_bytes())
                                .collect()
                        });
                        self.send(rank, GRANT, &grant);
                    }
                }
                let Some((rank, bytes)) = self.try_receive(EVENTS) else {
                    if !named
                        && stop.load(Ordering::SeqCst)
                        && stopped.get_or_insert_with(Instant::now).elapsed() > GRACE
                    {
                        named = true;
                        let missing: Vec<String> = (0..self.size)
                            .filter(|&r| running[r])
                            .map(|r| r.to_string())
                            .collect();
                        eprintln!(
                            "error: {} {} of {} did not finish within {GRACE:?} of the run being stopped (died, or still finishing a draw)",
                            if missing.len() == 1 { "rank" } else { "ranks" },
                            missing.join(", "),
                            self.size
                        );
                    }
                    std::thread::sleep(POLL);
                    continue;
                };
                if bytes.is_empty() {
                    running[rank] = false;
                    continue;
                }
                received += bytes.len() as u64;
                let decoded = decoders[rank].decode(&bytes).map_err(|e| e.to_string())?;
                // One message to the collector for each run of iterations
                // and adaptations (an `Event::Many`), the ends of chains
                // alone. When the collector stopped (its error is
                // reported), the other ranks' events are dropped until
                // they are done.
                let mut many = Vec::new();
                for event in decoded.into_iter().flat_map(Event::flatten) {
                    if matches!(event, Event::Finished { .. } | Event::Batches(_)) {
                        if !many.is_empty() {
                            let _ = events.send(Event::Many(std::mem::take(&mut many)));
                        }
                        let _ = events.send(event);
                    } else {
                        many.push(event);
                    }
                }
                if !many.is_empty() {
                    let _ = events.send(Event::Many(many));
                }
            }
            Ok(received)
        }

        /// Ranks but 0: this rank's events to rank 0, then its last
        /// message; sets `stop` when rank 0 says to stop the chains; with
        /// `asking`, also the groups of chains its executor asks for, from
        /// rank 0.
        pub fn send_events(
            &self,
            events: Receiver<Event>,
            stop: &AtomicBool,
            mut asking: Option<Asking>,
        ) -> Result<u64, String> {
            let mut encoder = Encoder::default();
            let mut sent = 0;
            let mut last = Instant::now();
            let mut looked = Instant::now();
            let mut asked = false;
            loop {
                if looked.elapsed() >= STOP_POLL {
                    looked = Instant::now();
                    if self.try_receive_from_zero(STOP_CHAINS).is_some() {
                        stop.store(true, Ordering::SeqCst);
                    }
                }
                if let Some(a) = &asking {
                    if !asked && a.wants.try_recv().is_ok() {
                        self.send(0, WANT, &(a.at_once as u64).to_le_bytes());
                        asked = true;
                    }
                    if asked && let Some(grant) = self.try_receive_from_zero(GRANT) {
                        asked = false;
                        let bound = |i: usize| {
                            let bytes = grant.get(8 * i..8 * i + 8)?;
                            Some(u64::from_le_bytes(bytes.try_into().ok()?) as usize)
                        };
                        match bound(0).zip(bound(1)) {
                            Some((start, end)) => {
                                let _ = a.groups.send(start..end);
                            }
                            // Every chain is handed out: the executor's
                            // thread ends after its group.
                            None => asking = None,
                        }
                    }
                }
                // Polled often while the executor's thread may be waiting
                // for chains.
                let wait = if asking.is_some() { POLL } else { SEND_EVERY };
                let done = match events.recv_timeout(wait) {
                    Ok(event) => {
                        encoder.push(event).map_err(|e| e.to_string())?;
                        false
                    }
                    Err(RecvTimeoutError::Timeout) => false,
                    Err(RecvTimeoutError::Disconnected) => true,
                };
                if !encoder.is_empty()
                    && (done || encoder.len() >= SEND_BYTES || last.elapsed() >= SEND_EVERY)
                {
                    let message = encoder.take();
                    sent += message.len() as u64;
                    self.send(0, EVENTS, &message);
                    last = Instant::now();
                }
                if done {
                    self.send(0, EVENTS, &[]);
                    return Ok(sent);
                }
            }
        }

        /// The next message tagged `tag` from rank 0, if one is there.
        fn try_receive_from_zero(&self, tag: i32) -> Option<Vec<u8>> {
            let probed = self
                .comm
                .process_at_rank(0)
                .immediate_matched_probe_with_tag(tag)?;
            Some(receive_probed(probed))
        }

        /// Rank 0: the run's exit status to every other rank.
        pub fn send_exit(&self, code: u8) {
            for rank in 1..self.size {
                self.send(rank, EXIT, &[code]);
            }
        }

        /// Ranks but 0: the run's exit status, from rank 0.
        pub fn receive_exit(&self) -> u8 {
            let code = self.receive_from_zero(EXIT);
            // A stop sent as this rank's last events crossed it: taken,
            // so that no message is left pending at MPI's end.
            while self.try_receive_from_zero(STOP_CHAINS).is_some() {}
            code.first().copied().unwrap_or(1)
        }

        /// Ends every rank's process (a failure rank 0 cannot recover from
        /// mid-run).
        pub fn abort(&self, code: i32) -> ! {
            self.comm.abort(code)
        }
    }

    /// Pooled warmup's exchange: rank 0 gathers every rank's records (a
    /// leading 0 byte, then little-endian f64s; or 1 and the reason a
    /// chain failed) and sends all of them, in rank order, to every rank;
    /// a failure on any rank stops all with a message naming it.
    impl bat::sampler::pooled::Gather for World {
        fn gather(&self, mine: Result<Vec<f64>, String>) -> Result<Vec<f64>, String> {
            let encode = |mine: &Result<Vec<f64>, String>| match mine {
                Ok(numbers) => std::iter::once(0)
                    .chain(numbers.iter().flat_map(|x| x.to_le_bytes()))
                    .collect::<Vec<u8>>(),
                Err(why) => std::iter::once(1).chain(why.bytes()).collect(),
            };
            let own = encode(&mine);
            let (all_ok, payload) = self.agree(&own, |theirs| {
                let mut all = vec![(0, own.clone())];
                all.extend(theirs);
                let mut numbers = Vec::new();
                for (rank, message) in all {
                    match message.split_first() {
                        Some((0, bytes)) => numbers.extend_from_slice(bytes),
                        Some((_, why)) => {
                            let why = String::from_utf8_lossy(why);
                            return (false, format!("rank {rank}: {why}").into_bytes());
                        }
                        None => return (false, format!("rank {rank}: no report").into_bytes()),
                    }
                }
                (true, numbers)
            });
            if !all_ok {
                return Err(String::from_utf8_lossy(&payload).into_owned());
            }
            Ok(payload
                .chunks_exact(8)
                .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
                .collect())
        }
    }

    /// Waits for `request` by testing it between short sleeps: MPI's own
    /// wait spins, taking a core from the sampler threads.
    fn wait_polling<'a, S: mpi::request::Scope<'a>>(
        mut request: mpi::request::Request<'a, [u8], S>,
    ) {
        loop {
            match request.test() {
                Ok(_) => return,
                Err(r) => {
                    request = r;
                    std::thread::sleep(SEND_POLL);
                }
            }
        }
    }

    /// The bytes of a probed message, polling (not spinning) until they are
    /// all there: MPI's blocking receive spins while a long message
    /// arrives, as fast as its sender sends the fragments.
    fn receive_probed((message, status): (Message, Status)) -> Vec<u8> {
        let count = status.count(u8::equivalent_datatype()).max(0) as usize;
        let mut bytes = vec![0u8; count];
        mpi::request::scope(|scope| {
            wait_polling(message.immediate_matched_receive_into(scope, &mut bytes[..]));
        });
        bytes
    }

    /// The flag SIGTERM sets (see [`stop_on_sigterm`]).
    static TERM_STOP: AtomicPtr<AtomicBool> = AtomicPtr::new(std::ptr::null_mut());

    extern "C" fn on_sigterm(_: libc::c_int) {
        let stop = TERM_STOP.load(Ordering::SeqCst);
        // SAFETY: set once from a `&'static AtomicBool`.
        if let Some(stop) = unsafe { stop.as_ref() }
            && stop.swap(true, Ordering::SeqCst)
        {
            // SAFETY: async-signal-safe; a second SIGTERM ends the process.
            unsafe { libc::_exit(143) }
        }
    }

    /// SIGTERM stops the run as Ctrl-C does (sets `stop`; a second one
    /// ends the process): MPI launchers end a job with SIGTERM (then
    /// SIGKILL) when interrupted, and every rank then stops its chains and
    /// rank 0 closes the draws file as after Ctrl-C. (When a rank died,
    /// rank 0 waits for it until the launcher ends it.)
    pub fn stop_on_sigterm(stop: &'static AtomicBool) {
        TERM_STOP.store(std::ptr::from_ref(stop).cast_mut(), Ordering::SeqCst);
        let handler: extern "C" fn(libc::c_int) = on_sigterm;
        // SAFETY: installs a handler that only touches atomics and _exit.
        unsafe {
            libc::signal(libc::SIGTERM, handler as libc::sighandler_t);
        }
    }

    /// Stderr (fd 2) written to a file until taken back: what a rank but 0
    /// would print while the ranks set up, shown only when it explains why
    /// this rank alone failed (rank 0 prints the messages all ranks share).
    pub struct Capture {
        saved: OwnedFd,
        file: std::fs::File,
    }

    impl Capture {
        pub fn start() -> Option<Capture> {
            let path = std::env::temp_dir().join(format!("bat-stderr-{}", std::process::id()));
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&path)
                .ok()?;
            let _ = std::fs::remove_file(&path);
            let _ = std::io::stderr().flush();
            // SAFETY: dup and dup2 of open descriptors; the duplicate is
            // owned by `saved` alone.
            unsafe {
                let saved = libc::dup(2);
                if saved < 0 {
                    return None;
                }
                if libc::dup2(file.as_raw_fd(), 2) < 0 {
                    libc::close(saved);
                    return None;
                }
                Some(Capture {
                    saved: OwnedFd::from_raw_fd(saved),
                    file,
                })
            }
        }

        /// What was written so far (and forgets it).
        pub fn take(&mut self) -> String {
            let _ = std::io::stderr().flush();
            let mut text = String::new();
            let _ = self.file.rewind();
            let _ = self.file.read_to_string(&mut text);
            let _ = self.file.set_len(0);
            let _ = self.file.rewind();
            text
        }
    }

    impl Drop for Capture {
        fn drop(&mut self) {
            let _ = std::io::stderr().flush();
            // SAFETY: restores fd 2 from the saved duplicate.
            unsafe {
                libc::dup2(self.saved.as_raw_fd(), 2);
            }
        }
    }
}

/// The ranks' agreement on the setup of a run (model, data, executor):
/// every rank sets up, then all go on only if all succeeded. A rank but 0
/// keeps what it would print meanwhile (the same warnings and errors as
/// rank 0's, as a rule) and shows it only when it alone failed, through
/// rank 0.
pub struct Setup<'a> {
    ranks: &'a Ranks,
    #[cfg(feature = "mpi")]
    capture: Option<world::Capture>,
}

impl<'a> Setup<'a> {
    pub fn start(ranks: &'a Ranks) -> Setup<'a> {
        Setup {
            ranks,
            #[cfg(feature = "mpi")]
            capture: (ranks.rank() != 0).then(world::Capture::start).flatten(),
        }
    }

    /// The setup is done: a rank but 0 prints to stderr again.
    pub fn finish(self) {}

    /// `result` on this rank, or a failure where any rank failed.
    pub fn agree<T>(
        &mut self,
        result: Result<T, super::model::Reported>,
    ) -> Result<T, super::model::Reported> {
        match self.ranks {
            Ranks::Single => result,
            #[cfg(feature = "mpi")]
            Ranks::World(world) => {
                let mut mine = vec![u8::from(result.is_ok())];
                if let Some(capture) = &mut self.capture {
                    mine.extend_from_slice(capture.take().as_bytes());
                }
                let (go, _) = world.agree(&mine, |theirs| {
                    if result.is_err() {
                        // Rank 0 said why.
                        return (false, Vec::new());
                    }
                    let mut go = true;
                    for (rank, message) in theirs {
                        if message.first() == Some(&1) {
                            continue;
                        }
                        go = false;
                        let why = String::from_utf8_lossy(&message[1.min(message.len())..]);
                        eprintln!("error: rank {rank} of {} cannot run:", world.size);
                        for line in why.trim_end().lines() {
                            eprintln!("  {line}");
                        }
                    }
                    (go, Vec::new())
                });
                match (go, result) {
                    (true, Ok(value)) => Ok(value),
                    _ => Err(super::model::Reported),
                }
            }
        }
    }
}
