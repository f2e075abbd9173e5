//! An area of a trace: a time window over a range of rows, as the timeline's right-button drag
//! selects it and `exaviz summary --from --to --ranks` asks for it.

/// The area: ticks `[from, to)` on locations `first..=last`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Area {
    pub from: u64,
    pub to: u64,
    pub first: u32,
    pub last: u32,
}

impl Area {
    /// Whether `location` is one of the area's rows.
    pub fn holds(&self, location: u32) -> bool {
        (self.first..=self.last).contains(&location)
    }

    /// The ticks of `[start, end)` inside the area's window.
    pub fn clip(&self, start: u64, end: u64) -> u64 {
        end.min(self.to).saturating_sub(start.max(self.from))
    }
}
