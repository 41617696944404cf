#!/usr/bin/python3
"""A stand-in for systemd-logind's shutdown inhibitors, on the bus DBUS_SYSTEM_BUS_ADDRESS names.

It serves what the shutdown guard uses of org.freedesktop.login1.Manager, as logind does:
- Inhibit(what, who, why, mode) -> h: a real file descriptor (the write end of a pipe); the lock
  lives until every copy of it is closed (the read end sees the hang-up), as logind's FIFO does;
- ListInhibitors() -> a(ssssuu): what, who, why, mode, uid, pid of the caller of Inhibit;
- the property InhibitDelayMaxUSec (t), from --delay-usec;
- the signal PrepareForShutdown(b).

The test drives it on stdin, one word a line:
  shutdown   emit PrepareForShutdown(true), then wait for the delay locks on "shutdown" to go or
             for InhibitDelayMaxUSec to pass, and say "poweroff" (what still held a lock then)
  cancel     emit PrepareForShutdown(false) (a cancelled shutdown)
  reboot-job systemd's job queue holds a start job for reboot.target from now on (ListJobs on
             org.freedesktop.systemd1, also served here): a shutdown that went past logind
  delay USEC InhibitDelayMaxUSec is USEC from now on, and the job queue is empty again (one bus
             serves a test file's tests one after another); says "delay"
  quit       leave
and reads its events on stdout, one JSON object a line: ready, inhibit, release, prepare, poweroff.
"""
import argparse
import json
import os
import sys
import time

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

MANAGER = "org.freedesktop.login1.Manager"
PATH = "/org/freedesktop/login1"


def say(event, **fields):
    fields["event"] = event
    fields["at"] = time.time()
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


class Manager(dbus.service.Object):
    def __init__(self, bus, delay_usec):
        super().__init__(bus, PATH)
        self.bus = bus
        self.delay_usec = delay_usec
        self.inhibitors = {}  # read fd -> (what, who, why, mode, uid, pid)
        self.shutdown_started = None
        self.poweroff_timer = None

    @dbus.service.method(MANAGER, in_signature="ssss", out_signature="h", sender_keyword="sender")
    def Inhibit(self, what, who, why, mode, sender=None):
        bus_object = self.bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus")
        daemon = dbus.Interface(bus_object, "org.freedesktop.DBus")
        pid = int(daemon.GetConnectionUnixProcessID(sender))
        uid = int(daemon.GetConnectionUnixUser(sender))
        read_end, write_end = os.pipe()
        self.inhibitors[read_end] = (str(what), str(who), str(why), str(mode), uid, pid)
        GLib.io_add_watch(read_end, GLib.IO_HUP | GLib.IO_ERR, self.released)
        say("inhibit", what=str(what), who=str(who), mode=str(mode), pid=pid)
        fd = dbus.types.UnixFd(write_end)  # a duplicate travels with the reply
        os.close(write_end)
        return fd

    def released(self, read_end, _condition):
        entry = self.inhibitors.pop(read_end, None)
        os.close(read_end)
        if entry is not None:
            say("release", who=entry[1], pid=entry[5])
        self.maybe_poweroff()
        return False

    @dbus.service.method(MANAGER, in_signature="", out_signature="a(ssssuu)")
    def ListInhibitors(self):
        return dbus.Array([dbus.Struct(e, signature="ssssuu") for e in self.inhibitors.values()], signature="(ssssuu)")

    @dbus.service.signal(MANAGER, signature="b")
    def PrepareForShutdown(self, start):
        pass

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        if interface == MANAGER and name == "InhibitDelayMaxUSec":
            return dbus.UInt64(self.delay_usec)
        raise dbus.exceptions.DBusException("org.freedesktop.DBus.Error.UnknownProperty", "no property " + name)

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return {"InhibitDelayMaxUSec": dbus.UInt64(self.delay_usec)} if interface == MANAGER else {}

    def delay_locks(self):
        return [e for e in self.inhibitors.values() if "shutdown" in e[0].split(":") and e[3] == "delay"]

    def start_shutdown(self):
        self.shutdown_started = time.monotonic()
        say("prepare", start=True, held=[e[1] for e in self.delay_locks()])
        self.PrepareForShutdown(True)
        self.poweroff_timer = GLib.timeout_add(max(1, self.delay_usec // 1000), self.poweroff, "delay")
        self.maybe_poweroff()

    def cancel_shutdown(self):
        if self.poweroff_timer is not None:
            GLib.source_remove(self.poweroff_timer)
            self.poweroff_timer = None
        self.shutdown_started = None
        say("prepare", start=False)
        self.PrepareForShutdown(False)

    def maybe_poweroff(self):
        if self.shutdown_started is not None and not self.delay_locks():
            # logind goes on once the last delay lock is gone; give the bus a moment like logind's loop
            GLib.idle_add(self.poweroff, "released")

    def poweroff(self, why):
        if self.shutdown_started is None:
            return False
        waited = time.monotonic() - self.shutdown_started
        self.shutdown_started = None
        if self.poweroff_timer is not None and why != "delay":
            GLib.source_remove(self.poweroff_timer)
        self.poweroff_timer = None
        say("poweroff", why=why, waitedMs=round(waited * 1000), held=[e[1] for e in self.delay_locks()])
        return False


class Systemd(dbus.service.Object):
    """org.freedesktop.systemd1.Manager.ListJobs: a(usssoo) (id, unit, type, state, job, unit path)."""

    def __init__(self, bus):
        super().__init__(bus, "/org/freedesktop/systemd1")
        self.jobs = []

    @dbus.service.method("org.freedesktop.systemd1.Manager", in_signature="", out_signature="a(usssoo)")
    def ListJobs(self):
        return dbus.Array(self.jobs, signature="(usssoo)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay-usec", type=int, default=5_000_000)
    args = parser.parse_args()
    DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(os.environ["DBUS_SYSTEM_BUS_ADDRESS"])
    name = dbus.service.BusName("org.freedesktop.login1", bus, do_not_queue=True)
    manager = Manager(bus, args.delay_usec)
    systemd_name = dbus.service.BusName("org.freedesktop.systemd1", bus, do_not_queue=True)
    systemd = Systemd(bus)
    loop = GLib.MainLoop()

    def command(source, _condition):
        line = source.readline()
        if line == "":
            loop.quit()
            return False
        word = line.strip()
        if word == "shutdown":
            manager.start_shutdown()
        elif word == "cancel":
            manager.cancel_shutdown()
        elif word == "reboot-job":
            systemd.jobs = [dbus.Struct((7, "reboot.target", "start", "waiting", dbus.ObjectPath("/org/freedesktop/systemd1/job/7"), dbus.ObjectPath("/org/freedesktop/systemd1/unit/reboot_2etarget")), signature="usssoo")]
            say("reboot-job")
        elif word.startswith("delay "):
            manager.delay_usec = int(word.split()[1])
            systemd.jobs = []
            say("delay", usec=manager.delay_usec)
        elif word == "quit":
            loop.quit()
            return False
        return True

    GLib.io_add_watch(sys.stdin, GLib.IO_IN | GLib.IO_HUP, command)
    say("ready", name=str(name.get_name()), systemd=str(systemd_name.get_name()))
    loop.run()


if __name__ == "__main__":
    main()
