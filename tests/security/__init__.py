"""Security tests of issue 26: files from others stay data.

Conventions (several engineers add to this folder):

* one file per topic, ``test_<topic>.py``; the shared crafting helpers are in
  :mod:`tests.security.attacks` (a code marker, zip members that declare sizes
  they do not hold, counting mbfmu's temporary folders);
* each test builds its malicious input itself, in ``tmp_path``, and asserts the
  safe outcome: nothing executed (the marker file is absent), nothing outside
  read (the secret absent from the output), the refusal message (one line,
  naming what is wrong), or no temporary folder left;
* where it costs nothing, the same test shows that the attack would be seen
  (the marker *is* written when the user names the code), so a test cannot
  pass by testing nothing;
* tests stay fast: bombs declare their sizes in the zip headers, limits are
  lowered with :func:`mbfmu.untrusted.limits.set_limits` (the ``limits``
  fixture restores them), never gigabytes on disk.
"""
