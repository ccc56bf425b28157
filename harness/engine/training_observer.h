// training_observer.h: what fit (trainer.h) reports while it trains, to one observer.
//
// fit calls these on the host, in this order per epoch: phase("train", false), around every step
// step(false) and step(true), phase("train", true), phase("evaluation", false/true) when the epoch
// is evaluated, save_checkpoint(e) every TrainOptions::save_every_epochs epochs, epoch(record),
// then stop_training(). power_w feeds the progress line. Every method has a default that does
// nothing, so an observer overrides only what it needs: the sweep's trial (trial/trial_stages.cpp:
// the stop signal, the power-limit optimiser, the epoch rows and the target), the training session
// (run/training_session.cpp: energy windows, live metrics), the `train` command (run/cycle.cpp:
// checkpoints) and the CLI (the hazards block before the training's time starts).
#pragma once

#include <cmath>
#include <cstdint>

namespace balerbench {

struct EpochRecord;  // trainer.h

class TrainingObserver {
 public:
  virtual ~TrainingObserver() = default;
  // Once the data and the model are set up and valid, before anything of the training is timed
  // (called by the commands that train, not by fit).
  virtual void before_training() {}
  // Both edges (end = false, then true) of each epoch's "train" pass (shuffle gather included) and
  // "evaluation" pass, e.g. for energy windows.
  virtual void phase(const char* /*name*/, bool /*end*/) {}
  // Before (end = false) and after (end = true) every training step, e.g. for the power-limit
  // optimiser or to stop on a signal by throwing. Steps stay asynchronous: an observer that
  // measures must synchronise.
  virtual void step(bool /*end*/) {}
  // After epoch `epoch` (0-based) when intermittent saving is on (TrainOptions::save_every_epochs).
  virtual void save_checkpoint(int64_t /*epoch*/) {}
  // Every epoch, once its record is complete.
  virtual void epoch(const EpochRecord& /*record*/) {}
  // Asked after every epoch (after epoch()); true ends training there, e.g. when a sweep's target
  // is met and the experiment says stop_when_reached.
  virtual bool stop_training() { return false; }
  // The live power for the progress line, W; NaN: unknown.
  virtual double power_w() { return NAN; }
};

// An observer that adds to another (`next`, or nothing): each method passes the call on; a
// subclass overrides what it adds and calls the base to pass it on.
class ForwardingObserver : public TrainingObserver {
 public:
  explicit ForwardingObserver(TrainingObserver* next) : next_(next) {}
  void before_training() override {
    if (next_) next_->before_training();
  }
  void phase(const char* name, bool end) override {
    if (next_) next_->phase(name, end);
  }
  void step(bool end) override {
    if (next_) next_->step(end);
  }
  void save_checkpoint(int64_t epoch) override {
    if (next_) next_->save_checkpoint(epoch);
  }
  void epoch(const EpochRecord& record) override {
    if (next_) next_->epoch(record);
  }
  bool stop_training() override { return next_ && next_->stop_training(); }
  double power_w() override { return next_ ? next_->power_w() : NAN; }

 private:
  TrainingObserver* next_;
};

}  // namespace balerbench
