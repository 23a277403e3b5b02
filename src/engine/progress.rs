//! How a long job tells a front end how far it is: one trait, below the
//! jobs that report through it (`index`, `stats`) and the front ends that
//! draw it (a terminal progress bar, or nothing).

/// Where a front end shows a long job's progress.
pub trait Progress: Sync {
    /// The job starts, with this many bytes of input to read.
    fn start(&self, total_bytes: u64);
    /// This many more bytes were read.
    fn advance(&self, bytes: u64);
    /// A short status (records and files done).
    fn message(&self, text: String);
    /// A line for the user (an error or a warning), printed without
    /// garbling the progress display.
    fn print(&self, line: &str);
    /// The job is over.
    fn done(&self);
}
