//! Executor events as bytes, for a run whose chains are shared over
//! processes (`bat run` under MPI): every rank but the writer encodes its
//! executor's [`Event`]s into messages and the writer decodes them into the
//! collector's channel, so that the collector sees one run of all chains.
//!
//! A stream is one sender's messages in order (MPI keeps the order of the
//! messages between two ranks): the layout of stored draws is sent once,
//! the first time a draw of it is sent, and named by number afterwards.
//! Draws by name are sent as stored numbers ([`DrawValues::into_stored`]),
//! as the collector would store them. Numbers travel as their bits, so the
//! writer stores exactly what the rank computed.
//!
//! Warmup iterations without a kept draw (warmup not saved) travel as
//! per-chain counts: the writer only counts them (progress), so their
//! statistics stay on the rank. They come back as that many warmup
//! iterations with NaN statistics, each chain's before its next event.
//! Integers travel as LEB128 varints (zigzag for signed ones).

use super::{
    BatchTotals, ChainError, ChainTotals, DrawRecord, DrawValues, Event, LaneWork, SampleStats,
};
use crate::output::{Dtype, VarSpec};
use language::span::Span;
use runtime::{ErrorKind, RuntimeError};
use std::sync::Arc;

const ITERATION: u8 = 0;
const ADAPTATION: u8 = 1;
const FINISHED: u8 = 2;
const BATCHES: u8 = 3;
const MANY: u8 = 4;
const LAYOUT: u8 = 5;
const WARMUP: u8 = 6;
const TRAJECTORY: u8 = 7;

/// Flags of an encoded iteration.
const IS_WARMUP: u8 = 1;
const DIVERGENT: u8 = 2;
const HAS_VALUES: u8 = 4;
const HAS_PRINTED: u8 = 8;

/// A message that is not a well-formed encoding of events.
#[derive(Debug, thiserror::Error)]
#[error("a malformed message from rank {rank}: {what}")]
pub struct WireError {
    pub rank: usize,
    pub what: String,
}

/// One sender's encoder: events in, message bytes out.
#[derive(Default)]
pub struct Encoder {
    layouts: Vec<Arc<[VarSpec]>>,
    buf: Vec<u8>,
    /// Warmup iterations without a kept draw not encoded yet, by chain.
    warmup: std::collections::BTreeMap<usize, u64>,
}

/// An event as encoded: an event, or a count of a chain's warmup
/// iterations without a kept draw.
enum Item {
    Event(Event),
    Warmup(usize, u64),
}

/// Warmup iterations of one chain in one encoded count, at most.
const WARMUP_PER_COUNT: u64 = u16::MAX as u64;

/// `event` is a warmup iteration that keeps no draw and printed nothing.
fn unsaved_warmup(event: &Event) -> Option<usize> {
    match event {
        Event::Iteration { chain, record }
            if record.warmup && record.values.is_none() && record.printed.is_empty() =>
        {
            Some(*chain)
        }
        _ => None,
    }
}

/// The chain an event is about, if any.
fn chain_of(event: &Event) -> Option<usize> {
    match event {
        Event::Iteration { chain, .. }
        | Event::Adaptation { chain, .. }
        | Event::Trajectory { chain, .. }
        | Event::Finished { chain, .. } => Some(*chain),
        Event::Batches(_) | Event::Many(_) => None,
    }
}

impl Encoder {
    /// Appends `event` to the message being built. A draw that cannot be
    /// taken apart as the collector would take it apart is an error.
    pub fn push(&mut self, event: Event) -> Result<(), super::CollectError> {
        match event {
            Event::Many(events) => {
                // Layouts first: they must precede the count.
                let mut items = Vec::with_capacity(events.len());
                for event in events {
                    self.item(event, &mut items)?;
                }
                if !items.is_empty() {
                    self.buf.push(MANY);
                    put_var(&mut self.buf, items.len() as u64);
                    for item in &items {
                        self.put_item(item);
                    }
                }
            }
            event => {
                let mut items = Vec::with_capacity(2);
                self.item(event, &mut items)?;
                for item in &items {
                    self.put_item(item);
                }
            }
        }
        Ok(())
    }

    /// `event` as the items to encode (none when it is only counted), its
    /// chain's warmup count first when one is waiting.
    fn item(&mut self, event: Event, items: &mut Vec<Item>) -> Result<(), super::CollectError> {
        if let Some(chain) = unsaved_warmup(&event) {
            let count = self.warmup.entry(chain).or_insert(0);
            *count += 1;
            if *count == WARMUP_PER_COUNT {
                self.warmup.remove(&chain);
                items.push(Item::Warmup(chain, WARMUP_PER_COUNT));
            }
            return Ok(());
        }
        if let Some(chain) = chain_of(&event)
            && let Some(count) = self.warmup.remove(&chain)
        {
            items.push(Item::Warmup(chain, count));
        }
        items.push(Item::Event(self.stored(event)?));
        Ok(())
    }

    fn put_item(&mut self, item: &Item) {
        match item {
            Item::Event(event) => self.put_event(event),
            Item::Warmup(chain, count) => {
                self.buf.push(WARMUP);
                put_var(&mut self.buf, *chain as u64);
                put_var(&mut self.buf, *count);
            }
        }
    }

    /// Bytes of the message built so far (the warmup counts waiting
    /// included, at most 6 bytes each).
    pub fn len(&self) -> usize {
        self.buf.len() + 6 * self.warmup.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty() && self.warmup.is_empty()
    }

    /// The message built so far, the warmup counts waiting last; the next
    /// one starts empty (the layouts sent stay known).
    pub fn take(&mut self) -> Vec<u8> {
        for (chain, count) in std::mem::take(&mut self.warmup) {
            self.put_item(&Item::Warmup(chain, count));
        }
        std::mem::take(&mut self.buf)
    }

    /// `event` with its draw (if any) stored, its layout sent first when new.
    fn stored(&mut self, event: Event) -> Result<Event, super::CollectError> {
        let Event::Iteration { chain, mut record } = event else {
            return Ok(event);
        };
        if let Some(values) = record.values.take() {
            let values = values.into_stored()?;
            if let DrawValues::Stored { layout, .. } = &values
                && self.layout_id(layout).is_none()
            {
                self.buf.push(LAYOUT);
                put_usize(&mut self.buf, self.layouts.len());
                put_usize(&mut self.buf, layout.len());
                for spec in layout.iter() {
                    put_str(&mut self.buf, &spec.name);
                    self.buf.push(match spec.dtype {
                        Dtype::F64 => 0,
                        Dtype::I64 => 1,
                        Dtype::Bool => 2,
                    });
                    put_usize(&mut self.buf, spec.dims.len());
                    for &d in &spec.dims {
                        put_usize(&mut self.buf, d);
                    }
                }
                self.layouts.push(layout.clone());
            }
            record.values = Some(values);
        }
        Ok(Event::Iteration { chain, record })
    }

    fn layout_id(&self, layout: &Arc<[VarSpec]>) -> Option<usize> {
        (self.layouts.iter())
            .position(|l| Arc::ptr_eq(l, layout))
            .or_else(|| self.layouts.iter().position(|l| **l == **layout))
    }

    fn put_event(&mut self, event: &Event) {
        match event {
            Event::Iteration { chain, record } => {
                let s = &record.stats;
                let mut flags = 0;
                for (set, flag) in [
                    (record.warmup, IS_WARMUP),
                    (s.divergent, DIVERGENT),
                    (record.values.is_some(), HAS_VALUES),
                    (!record.printed.is_empty(), HAS_PRINTED),
                ] {
                    if set {
                        flags |= flag;
                    }
                }
                let b = &mut self.buf;
                b.push(ITERATION);
                b.push(flags);
                put_var(b, *chain as u64);
                put_f64(b, s.lp);
                put_f64(b, s.accept_stat);
                put_f64(b, s.step_size);
                put_f64(b, s.energy);
                put_signed(b, s.tree_depth);
                put_signed(b, s.n_leapfrog);
                // `stored` stored every draw.
                if let Some(DrawValues::Stored { layout, numbers }) = &record.values {
                    let id = self.layout_id(layout).unwrap_or(usize::MAX);
                    let b = &mut self.buf;
                    put_var(b, id as u64);
                    put_var(b, numbers.len() as u64);
                    b.reserve(8 * numbers.len());
                    for &x in numbers {
                        put_f64(b, x);
                    }
                }
                if !record.printed.is_empty() {
                    let b = &mut self.buf;
                    put_var(b, record.printed.len() as u64);
                    for line in &record.printed {
                        put_str(b, line);
                    }
                }
            }
            Event::Adaptation {
                chain,
                step_size,
                inv_metric,
            } => {
                let b = &mut self.buf;
                b.push(ADAPTATION);
                put_usize(b, *chain);
                put_f64(b, *step_size);
                put_f64s(b, inv_metric);
            }
            Event::Trajectory { chain, trajectory } => {
                let b = &mut self.buf;
                b.push(TRAJECTORY);
                put_usize(b, *chain);
                put_f64s(b, &trajectory.start);
                put_f64s(b, &trajectory.end);
                put_f64s(b, &trajectory.velocity);
                put_f64(b, trajectory.time);
            }
            Event::Finished { chain, result } => {
                let b = &mut self.buf;
                b.push(FINISHED);
                put_usize(b, *chain);
                match result {
                    Ok(totals) => {
                        b.push(0);
                        put_u64(b, totals.gradient_evaluations);
                    }
                    Err(e) => {
                        b.push(1);
                        put_usize(b, e.chain);
                        put_error(b, &e.error);
                        match &e.last_log_density_error {
                            Some(last) => {
                                b.push(1);
                                put_error(b, last);
                            }
                            None => b.push(0),
                        }
                        b.push(u8::from(e.interrupted));
                    }
                }
            }
            Event::Batches(t) => {
                let b = &mut self.buf;
                b.push(BATCHES);
                for x in [
                    t.calls,
                    t.lanes,
                    t.slots,
                    t.gradient_blocks.slots,
                    t.gradient_blocks.useful,
                ] {
                    put_u64(b, x);
                }
            }
            // `push` takes every `Many` apart into items.
            Event::Many(events) => {
                self.buf.push(MANY);
                put_var(&mut self.buf, events.len() as u64);
                for event in events {
                    self.put_event(event);
                }
            }
        }
    }
}

/// One sender's decoder: message bytes in, events out.
pub struct Decoder {
    rank: usize,
    layouts: Vec<Arc<[VarSpec]>>,
}

impl Decoder {
    /// The decoder of the messages of `rank` (named in its errors).
    pub fn new(rank: usize) -> Decoder {
        Decoder {
            rank,
            layouts: Vec::new(),
        }
    }

    /// The events of one message, in order.
    pub fn decode(&mut self, message: &[u8]) -> Result<Vec<Event>, WireError> {
        let mut r = Reader {
            bytes: message,
            at: 0,
            rank: self.rank,
        };
        let mut events = Vec::new();
        while !r.done() {
            self.event(&mut r, &mut events)?;
        }
        Ok(events)
    }

    /// The next item's events onto `events` (none for a layout, which is
    /// remembered; a warmup count's iterations).
    fn event(&mut self, r: &mut Reader<'_>, events: &mut Vec<Event>) -> Result<(), WireError> {
        let tag = r.u8()?;
        events.push(match tag {
            LAYOUT => {
                let id = r.usize()?;
                if id != self.layouts.len() {
                    return Err(r.error(format!("layout {id} out of order")));
                }
                let n = r.len(1)?;
                let mut specs = Vec::with_capacity(n);
                for _ in 0..n {
                    let name = r.string()?;
                    let dtype = match r.u8()? {
                        0 => Dtype::F64,
                        1 => Dtype::I64,
                        2 => Dtype::Bool,
                        other => return Err(r.error(format!("dtype {other}"))),
                    };
                    let n_dims = r.len(8)?;
                    let dims = (0..n_dims).map(|_| r.usize()).collect::<Result<_, _>>()?;
                    specs.push(VarSpec { name, dims, dtype });
                }
                self.layouts.push(specs.into());
                return Ok(());
            }
            WARMUP => {
                let chain = r.var_usize()?;
                let count = r.var()?;
                if count == 0 || count > WARMUP_PER_COUNT {
                    return Err(r.error(format!("a count of {count} warmup iterations")));
                }
                let record = DrawRecord {
                    warmup: true,
                    stats: SampleStats {
                        lp: f64::NAN,
                        accept_stat: f64::NAN,
                        step_size: f64::NAN,
                        tree_depth: 0,
                        n_leapfrog: 0,
                        divergent: false,
                        energy: f64::NAN,
                    },
                    values: None,
                    printed: Vec::new(),
                    point: None,
                };
                events.extend((0..count).map(|_| Event::Iteration {
                    chain,
                    record: record.clone(),
                }));
                return Ok(());
            }
            ITERATION => {
                let flags = r.u8()?;
                let chain = r.var_usize()?;
                let stats = SampleStats {
                    lp: r.f64()?,
                    accept_stat: r.f64()?,
                    step_size: r.f64()?,
                    energy: r.f64()?,
                    tree_depth: r.signed()?,
                    n_leapfrog: r.signed()?,
                    divergent: flags & DIVERGENT != 0,
                };
                let values = if flags & HAS_VALUES != 0 {
                    let id = r.var_usize()?;
                    let layout = (self.layouts.get(id).cloned())
                        .ok_or_else(|| r.error(format!("unknown layout {id}")))?;
                    let n = r.var_len(8)?;
                    let numbers = (0..n).map(|_| r.f64()).collect::<Result<_, _>>()?;
                    Some(DrawValues::Stored { layout, numbers })
                } else {
                    None
                };
                let printed = if flags & HAS_PRINTED != 0 {
                    let n = r.var_len(1)?;
                    (0..n).map(|_| r.string()).collect::<Result<_, _>>()?
                } else {
                    Vec::new()
                };
                Event::Iteration {
                    chain,
                    record: DrawRecord {
                        warmup: flags & IS_WARMUP != 0,
                        stats,
                        values,
                        printed,
                        point: None,
                    },
                }
            }
            ADAPTATION => Event::Adaptation {
                chain: r.usize()?,
                step_size: r.f64()?,
                inv_metric: r.f64s()?,
            },
            TRAJECTORY => Event::Trajectory {
                chain: r.usize()?,
                trajectory: super::Trajectory {
                    start: r.f64s()?,
                    end: r.f64s()?,
                    velocity: r.f64s()?,
                    time: r.f64()?,
                },
            },
            FINISHED => {
                let chain = r.usize()?;
                let result = match r.u8()? {
                    0 => Ok(ChainTotals {
                        gradient_evaluations: r.u64()?,
                    }),
                    1 => {
                        let error_chain = r.usize()?;
                        let error = r.error_value()?;
                        let last_log_density_error = match r.u8()? {
                            0 => None,
                            _ => Some(r.error_value()?),
                        };
                        Err(ChainError {
                            chain: error_chain,
                            error,
                            last_log_density_error,
                            interrupted: r.bool()?,
                        })
                    }
                    other => return Err(r.error(format!("result tag {other}"))),
                };
                Event::Finished { chain, result }
            }
            BATCHES => Event::Batches(BatchTotals {
                calls: r.u64()?,
                lanes: r.u64()?,
                slots: r.u64()?,
                gradient_blocks: LaneWork {
                    slots: r.u64()?,
                    useful: r.u64()?,
                },
            }),
            MANY => {
                let n = r.var_len(1)?;
                let mut many = Vec::with_capacity(n);
                for _ in 0..n {
                    let before = many.len();
                    self.event(r, &mut many)?;
                    if many.len() == before {
                        return Err(r.error("a layout inside many events".into()));
                    }
                }
                Event::Many(many)
            }
            other => return Err(r.error(format!("event tag {other}"))),
        });
        Ok(())
    }
}

/// `x` as a LEB128 varint.
fn put_var(b: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        b.push(x as u8 | 0x80);
        x >>= 7;
    }
    b.push(x as u8);
}

/// `x` zigzag-encoded as a varint (small magnitudes take one byte).
fn put_signed(b: &mut Vec<u8>, x: i64) {
    put_var(b, ((x << 1) ^ (x >> 63)) as u64);
}

fn put_u64(b: &mut Vec<u8>, x: u64) {
    b.extend_from_slice(&x.to_le_bytes());
}

fn put_usize(b: &mut Vec<u8>, x: usize) {
    put_u64(b, x as u64);
}

fn put_f64(b: &mut Vec<u8>, x: f64) {
    put_u64(b, x.to_bits());
}

fn put_f64s(b: &mut Vec<u8>, xs: &[f64]) {
    put_usize(b, xs.len());
    b.reserve(8 * xs.len());
    for &x in xs {
        put_f64(b, x);
    }
}

fn put_str(b: &mut Vec<u8>, s: &str) {
    put_usize(b, s.len());
    b.extend_from_slice(s.as_bytes());
}

fn put_error(b: &mut Vec<u8>, e: &RuntimeError) {
    b.push(match e.kind {
        ErrorKind::Data => 0,
        ErrorKind::Rejection => 1,
        ErrorKind::IndexOutOfRange => 2,
        ErrorKind::Constraint => 3,
        ErrorKind::Fatal => 4,
        ErrorKind::Unsupported => 5,
    });
    put_str(b, &e.message);
    match e.span {
        Some(span) => {
            b.push(1);
            put_u64(b, span.start.into());
            put_u64(b, span.end.into());
        }
        None => b.push(0),
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    rank: usize,
}

impl Reader<'_> {
    fn error(&self, what: String) -> WireError {
        WireError {
            rank: self.rank,
            what: format!("{what} at byte {}", self.at),
        }
    }

    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    fn take(&mut self, n: usize) -> Result<&[u8], WireError> {
        let end = (self.at.checked_add(n))
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| self.error(format!("{n} bytes past the end")))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }

    fn bool(&mut self) -> Result<bool, WireError> {
        Ok(self.u8()? != 0)
    }

    fn u64(&mut self) -> Result<u64, WireError> {
        let bytes = self.take(8)?;
        Ok(u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8])))
    }

    fn usize(&mut self) -> Result<usize, WireError> {
        let x = self.u64()?;
        usize::try_from(x).map_err(|_| self.error(format!("{x} is too large")))
    }

    /// A count of items of at least `item_bytes` each: no more than the
    /// message can hold.
    fn len(&mut self, item_bytes: usize) -> Result<usize, WireError> {
        let n = self.usize()?;
        if n.saturating_mul(item_bytes) > self.bytes.len() - self.at {
            return Err(self.error(format!("{n} items past the end")));
        }
        Ok(n)
    }

    fn var(&mut self) -> Result<u64, WireError> {
        let mut x = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.u8()?;
            let bits = u64::from(byte & 0x7f);
            if shift == 63 && bits > 1 {
                return Err(self.error("a varint past 64 bits".into()));
            }
            x |= bits << shift;
            if byte & 0x80 == 0 {
                return Ok(x);
            }
        }
        Err(self.error("a varint past 64 bits".into()))
    }

    fn var_usize(&mut self) -> Result<usize, WireError> {
        let x = self.var()?;
        usize::try_from(x).map_err(|_| self.error(format!("{x} is too large")))
    }

    fn signed(&mut self) -> Result<i64, WireError> {
        let x = self.var()?;
        Ok((x >> 1) as i64 ^ -((x & 1) as i64))
    }

    /// A varint count of items of at least `item_bytes` each: no more than
    /// the message can hold.
    fn var_len(&mut self, item_bytes: usize) -> Result<usize, WireError> {
        let n = self.var_usize()?;
        if n.saturating_mul(item_bytes) > self.bytes.len() - self.at {
            return Err(self.error(format!("{n} items past the end")));
        }
        Ok(n)
    }

    fn f64(&mut self) -> Result<f64, WireError> {
        Ok(f64::from_bits(self.u64()?))
    }

    fn f64s(&mut self) -> Result<Vec<f64>, WireError> {
        let n = self.len(8)?;
        (0..n).map(|_| self.f64()).collect()
    }

    fn string(&mut self) -> Result<String, WireError> {
        let n = self.len(1)?;
        let bytes = self.take(n)?.to_vec();
        String::from_utf8(bytes).map_err(|_| self.error("a string not UTF-8".into()))
    }

    fn error_value(&mut self) -> Result<RuntimeError, WireError> {
        let kind = match self.u8()? {
            0 => ErrorKind::Data,
            1 => ErrorKind::Rejection,
            2 => ErrorKind::IndexOutOfRange,
            3 => ErrorKind::Constraint,
            4 => ErrorKind::Fatal,
            5 => ErrorKind::Unsupported,
            other => return Err(self.error(format!("error kind {other}"))),
        };
        let message = self.string()?;
        let span = match self.u8()? {
            0 => None,
            _ => Some(Span {
                start: self.u64()? as u32,
                end: self.u64()? as u32,
            }),
        };
        Ok(RuntimeError {
            kind,
            message,
            span,
        })
    }
}

/// The chains of rank `rank` of `ranks` when `n_chains` chains are shared
/// out: contiguous ranges in rank order, the first `n_chains % ranks`
/// ranks one chain more than the others.
pub fn share(n_chains: usize, ranks: usize, rank: usize) -> std::ops::Range<usize> {
    let ranks = ranks.max(1);
    let (base, extra) = (n_chains / ranks, n_chains % ranks);
    let start = rank * base + rank.min(extra);
    let len = base + usize::from(rank < extra);
    start.min(n_chains)..(start + len).min(n_chains)
}

/// The chains of a run handed out in groups as ranks ask for them, so
/// that a rank with more to do besides sampling (rank 0 writes the file)
/// or a slower machine samples fewer chains: a group is a quarter of the
/// chains left per rank ("guided" scheduling: large groups first, small
/// ones at the end, so the ranks finish within about one small group of
/// each other), at least what the asking rank runs at once (its threads'
/// lanes) and at most an equal share of all chains (so that every rank
/// gets chains at the start, as with [`share`]). Chain `i`'s draws depend
/// only on the seed and `i`, not on the rank that runs it.
pub struct ChainQueue {
    n_chains: usize,
    ranks: usize,
    next: std::sync::Mutex<usize>,
}

impl ChainQueue {
    pub fn new(n_chains: usize, ranks: usize) -> ChainQueue {
        ChainQueue {
            n_chains,
            ranks: ranks.max(1),
            next: std::sync::Mutex::new(0),
        }
    }

    /// The next group for a rank that runs `at_once` chains at a time;
    /// None once every chain is handed out.
    pub fn take(&self, at_once: usize) -> Option<std::ops::Range<usize>> {
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        let left = self.n_chains - *next;
        if left == 0 {
            return None;
        }
        let guided = left.div_ceil(4 * self.ranks);
        let size = (guided.max(at_once.max(1)))
            .min(self.n_chains.div_ceil(self.ranks))
            .min(left);
        let start = *next;
        *next += size;
        Some(start..*next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use language::value::Value;

    fn stats(x: f64) -> SampleStats {
        SampleStats {
            lp: -x,
            accept_stat: 0.25,
            step_size: f64::MIN_POSITIVE,
            tree_depth: 3,
            n_leapfrog: -7,
            divergent: true,
            energy: f64::NAN,
        }
    }

    /// Every kind of event comes back equal (numbers bit for bit: a NaN's
    /// payload, −0, subnormals), over several messages of one stream, a
    /// layout sent once and reused.
    #[test]
    fn events_come_back_bit_for_bit() {
        let layout: Arc<[VarSpec]> = vec![
            VarSpec::real("mu", &[]),
            VarSpec::int("k", &[2]),
            VarSpec::boolean("b", &[1, 1]),
        ]
        .into();
        let odd = [f64::from_bits(0x7ff8_0000_dead_beef), -0.0, 5e-324, 1.5];
        let iteration = |chain, numbers: &[f64]| Event::Iteration {
            chain,
            record: DrawRecord {
                warmup: chain % 2 == 0,
                stats: stats(chain as f64),
                values: Some(DrawValues::Stored {
                    layout: layout.clone(),
                    numbers: numbers.to_vec(),
                }),
                printed: vec!["x = 1".into(), "ünï".into()],
                point: None,
            },
        };
        let failed = ChainError {
            chain: 9,
            error: RuntimeError {
                kind: ErrorKind::Rejection,
                message: "bad".into(),
                span: Some(Span { start: 3, end: 8 }),
            },
            last_log_density_error: Some(RuntimeError::fatal("worse")),
            interrupted: true,
        };
        let first = vec![
            iteration(4, &odd),
            Event::Many(vec![
                iteration(5, &[1.0, 2.0, 3.0, 4.0]),
                Event::Adaptation {
                    chain: 5,
                    step_size: 0.5,
                    inv_metric: odd.to_vec(),
                },
                Event::Trajectory {
                    chain: 5,
                    trajectory: super::super::Trajectory {
                        start: odd.to_vec(),
                        end: vec![1.0, -2.0],
                        velocity: odd[1..].to_vec(),
                        time: 0.75,
                    },
                },
            ]),
        ];
        let second = vec![
            Event::Iteration {
                chain: 6,
                record: DrawRecord {
                    warmup: false,
                    stats: stats(1.0),
                    values: None,
                    printed: Vec::new(),
                    point: None,
                },
            },
            iteration(7, &odd),
            Event::Finished {
                chain: 7,
                result: Ok(ChainTotals {
                    gradient_evaluations: u64::MAX,
                }),
            },
            Event::Finished {
                chain: 9,
                result: Err(failed),
            },
            Event::Batches(BatchTotals {
                calls: 1,
                lanes: 2,
                slots: 3,
                gradient_blocks: LaneWork {
                    slots: 4,
                    useful: 5,
                },
            }),
        ];
        let mut encoder = Encoder::default();
        let mut decoder = Decoder::new(1);
        let mut layouts_sent = 0;
        for events in [&first, &second] {
            for event in events.iter() {
                encoder.push(event.clone()).unwrap();
            }
            let message = encoder.take();
            layouts_sent += message.iter().filter(|&&b| b == LAYOUT).count().min(1);
            let back = decoder.decode(&message).unwrap();
            assert_eq!(back.len(), events.len());
            for (a, b) in back.iter().zip(events.iter()) {
                // Bit for bit: compare the debug text of the bits.
                assert_eq!(format!("{:?}", bits(a)), format!("{:?}", bits(b)));
            }
        }
        assert!(layouts_sent >= 1);
        assert_eq!(decoder.layouts.len(), 1, "the layout is sent once");
    }

    /// The numbers of an event as bits, the rest as debug text.
    fn bits(event: &Event) -> (String, Vec<u64>) {
        let mut numbers = Vec::new();
        let mut e = event.clone();
        if let Event::Iteration { record, .. } = &mut e {
            numbers.extend([record.stats.lp, record.stats.energy].map(f64::to_bits));
            record.stats.energy = 0.0;
            if let Some(DrawValues::Stored { numbers: n, .. }) = &mut record.values {
                numbers.extend(n.iter().map(|x| x.to_bits()));
                n.clear();
            }
        }
        if let Event::Many(events) = &e {
            let inner: Vec<_> = events.iter().map(bits).collect();
            return (format!("{inner:?}"), numbers);
        }
        if let Event::Adaptation { inv_metric, .. } = &mut e {
            numbers.extend(inv_metric.iter().map(|x| x.to_bits()));
            inv_metric.clear();
        }
        if let Event::Trajectory { trajectory, .. } = &mut e {
            for part in [
                &mut trajectory.start,
                &mut trajectory.end,
                &mut trajectory.velocity,
            ] {
                numbers.extend(part.iter().map(|x| x.to_bits()));
                part.clear();
            }
        }
        (format!("{e:?}"), numbers)
    }

    /// Warmup iterations without a kept draw travel as per-chain counts
    /// and come back as that many warmup iterations, each chain's before
    /// its next event (its adaptation, its sampling, its end), in a few
    /// bytes; the iterations that keep a draw or printed travel whole.
    #[test]
    fn unsaved_warmup_travels_as_counts() {
        let warmup = |chain| Event::Iteration {
            chain,
            record: DrawRecord {
                warmup: true,
                stats: stats(1.0),
                values: None,
                printed: Vec::new(),
                point: None,
            },
        };
        let adaptation = |chain| Event::Adaptation {
            chain,
            step_size: 0.5,
            inv_metric: vec![1.0],
        };
        let mut printed = warmup(1);
        if let Event::Iteration { record, .. } = &mut printed {
            record.printed = vec!["x".into()];
        }
        let mut events = Vec::new();
        for _ in 0..300 {
            events.extend([warmup(0), warmup(1)]);
        }
        events.push(printed.clone());
        events.push(adaptation(0));
        events.push(warmup(1));
        let mut encoder = Encoder::default();
        encoder.push(Event::Many(events[..400].to_vec())).unwrap();
        for event in &events[400..] {
            encoder.push(event.clone()).unwrap();
        }
        let message = encoder.take();
        assert!(message.len() < 200, "{} bytes", message.len());
        let back: Vec<Event> = (Decoder::new(1).decode(&message).unwrap().into_iter())
            .flat_map(Event::flatten)
            .collect();
        // Per chain, the same events in the same order.
        for chain in [0, 1] {
            let of = |events: &[Event]| -> Vec<String> {
                (events.iter())
                    .filter(|e| chain_of(e) == Some(chain))
                    .map(|e| match e {
                        Event::Iteration { record, .. } if record.printed.is_empty() => {
                            format!("warmup {}", record.warmup)
                        }
                        e => format!("{:?}", bits(e)),
                    })
                    .collect()
            };
            assert_eq!(of(&back), of(&events), "chain {chain}");
        }
        assert!(encoder.is_empty());
        // A count beyond what an encoder sends is an error.
        let mut bad = vec![WARMUP, 0];
        put_var(&mut bad, WARMUP_PER_COUNT + 1);
        assert!(Decoder::new(1).decode(&bad).is_err());
    }

    /// A draw by name arrives as the numbers the collector would store.
    #[test]
    fn named_draws_arrive_stored() {
        let named = DrawValues::Named(vec![
            ("a".into(), Value::Real(2.5)),
            ("v".into(), Value::Vector(vec![1.0, -3.0])),
        ]);
        let event = Event::Iteration {
            chain: 0,
            record: DrawRecord {
                warmup: false,
                stats: stats(0.0),
                values: Some(named.clone()),
                printed: Vec::new(),
                point: None,
            },
        };
        let mut encoder = Encoder::default();
        encoder.push(event).unwrap();
        let back = Decoder::new(2).decode(&encoder.take()).unwrap();
        let Event::Iteration { record, .. } = &back[0] else {
            panic!("{back:?}")
        };
        assert_eq!(record.values, Some(named.into_stored().unwrap()));
    }

    /// A truncated or corrupted message is an error naming its rank, never
    /// a panic.
    #[test]
    fn malformed_messages_are_errors() {
        let mut encoder = Encoder::default();
        encoder
            .push(Event::Adaptation {
                chain: 1,
                step_size: 0.1,
                inv_metric: vec![1.0; 4],
            })
            .unwrap();
        let message = encoder.take();
        for cut in 0..message.len() {
            if cut == 0 {
                continue;
            }
            let error = Decoder::new(3).decode(&message[..cut]).unwrap_err();
            assert!(error.to_string().contains("from rank 3"), "{error}");
        }
        let mut bad = message.clone();
        bad[0] = 99;
        assert!(Decoder::new(3).decode(&bad).is_err());
        // A count far beyond the message.
        let mut huge = message;
        huge[9 + 8..9 + 16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(Decoder::new(3).decode(&huge).is_err());
    }

    /// The queue hands out every chain once, in order, in groups that
    /// shrink to the asker's size, none larger than an equal share; the
    /// first round gives every rank chains.
    #[test]
    fn the_queue_hands_out_every_chain_once() {
        for (n_chains, ranks, at_once) in [(1000, 2, 16), (7, 3, 16), (5, 3, 1), (2, 3, 16)] {
            let queue = ChainQueue::new(n_chains, ranks);
            let mut groups = Vec::new();
            while let Some(group) = queue.take(at_once) {
                groups.push(group);
            }
            let all: Vec<usize> = groups.iter().flat_map(|g| g.clone()).collect();
            assert_eq!(all, (0..n_chains).collect::<Vec<_>>());
            assert!(groups.iter().all(|g| g.len() <= n_chains.div_ceil(ranks)));
            let first_round: usize = groups.iter().take(ranks).map(|g| g.len()).sum();
            assert!(groups.len() >= ranks.min(n_chains), "{groups:?}");
            assert!(first_round <= n_chains);
            if n_chains == 1000 {
                assert_eq!(groups[0], 0..125);
                assert_eq!(
                    groups.last().unwrap().len(),
                    1000 - groups.last().unwrap().start
                );
                assert!(groups.iter().rev().skip(1).take(3).all(|g| g.len() == 16));
            }
        }
        assert_eq!(ChainQueue::new(7, 3).take(16), Some(0..3));
    }

    /// Shares cover every chain once, in order, sizes differing by at
    /// most one, for ranks that divide the chains or not (and more ranks
    /// than chains).
    #[test]
    fn shares_cover_every_chain_once() {
        for n_chains in [0, 1, 2, 7, 10, 1000] {
            for ranks in 1..=12 {
                let shares: Vec<_> = (0..ranks).map(|r| share(n_chains, ranks, r)).collect();
                let all: Vec<usize> = shares.iter().flat_map(|s| s.clone()).collect();
                assert_eq!(all, (0..n_chains).collect::<Vec<_>>());
                let sizes: Vec<usize> = shares.iter().map(|s| s.len()).collect();
                let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
                assert!(hi - lo <= 1, "{n_chains} over {ranks}: {sizes:?}");
            }
        }
        assert_eq!(share(10, 3, 0), 0..4);
        assert_eq!(share(10, 3, 1), 4..7);
        assert_eq!(share(10, 3, 2), 7..10);
    }
}
