"""mbfmu.control"""
