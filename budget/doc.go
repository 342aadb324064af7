// Package budget prices model calls and keeps their spending under a cap.
//
// The cap holds because money is reserved before a call is made, never
// counted only afterwards: Meter.Reserve holds an upper bound of the call's
// cost (the prompt's token bound at the full input price plus the completion
// limit at the output price) in the task's meter and in every parent meter at
// once, and clamps the completion limit to what the tightest of them still
// allows. The caller sends that limit as max_completion_tokens, then settles
// the reservation with the usage the server reported. As long as the server
// honours the limit, what is spent never passes any cap, whatever number of
// tasks share the run-wide meter. A call the server may have billed without
// reporting its usage is charged the whole amount held (CommitBound). A
// server that reports more usage than a call's bound breaks that condition:
// the excess is recorded (Totals.Overrun) and the tree makes no more
// reservations that a cap governs.
//
// Money is counted in whole nanodollars (int64); float64 dollars appear only
// at the edges, for configuration and display.
package budget
