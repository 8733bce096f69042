"""What a person sees while a command runs: progress bars and the sweep on the console.

Above bench and report (it drives the one and shows the other), below commands; bench
itself prints nothing.
"""
